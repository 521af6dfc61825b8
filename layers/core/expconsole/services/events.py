"""The logged events catalogue: records, per-event records, summary, metrics built on an event.

Records are read from the event objects in S3 (store.s3) for a window of UTC days (of the
events' timestamps): the last 7 days by default, `days` (1 to 31; both with tomorrow's
partition, as timestamps up to a day ahead are accepted) or `startDate`/`endDate`
(inclusive, at most 31 days). Newest first (ties: by name). For one event name, only the days
whose counters saw that name are read. Limits, at this scale by design: every object of the
window is fetched (16 at a time) and decompressed, so a listing costs about one S3 GET per
ingest request in the window; a window holding more than 200,000 events is a 400 asking for a
narrower one. A compacted (Parquet) day is not read here yet.

The summary comes from the counters alone (store.event_counters: one query on GSI1): daily
counts, first and last receipt times, metadata keys seen. The metrics of an event are the
built-ins `<event>::event_count` and `<event>::event_dau` and every stored metric whose
lineage names the event (`metricEvents` or non-custom funnel steps), archived ones included.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime, timedelta
from typing import Any

from expconsole import kinds
from expconsole.errors import Invalid, NotFound
from expconsole.models.events import (
    DEFAULT_WINDOW_DAYS,
    MAX_WINDOW_DAYS,
    EventListQuery,
    logged_record,
)
from expconsole.models.pagination import Page, page_of
from expconsole.store import dynamo, event_counters, s3

MAX_SCANNED_EVENTS = 200_000
READERS = 16


def window(q: EventListQuery, today: date | None = None) -> list[str]:
    """The UTC days to read, newest first."""
    today = today or datetime.now(UTC).date()
    if q.startDate is None and q.endDate is None:
        n = q.days or DEFAULT_WINDOW_DAYS
        # tomorrow too: ingestion takes timestamps up to a day ahead
        return [(today - timedelta(days=i)).isoformat() for i in range(-1, n)]
    if q.days is not None:
        raise Invalid.field("days", "give either days or startDate/endDate, not both")
    # models.metrics creates some 25 model classes: imported where one of its functions is needed,
    # not at the events function's every cold start.
    from expconsole.models.metrics import parse_date

    try:
        start = parse_date(q.startDate)
    except ValueError as exc:
        raise Invalid.field("startDate", str(exc)) from None
    try:
        end = parse_date(q.endDate)
    except ValueError as exc:
        raise Invalid.field("endDate", str(exc)) from None
    end = end or today
    start = start or end - timedelta(days=DEFAULT_WINDOW_DAYS - 1)
    if start > end:
        raise Invalid.field("startDate", "must not be after endDate")
    span = (end - start).days + 1
    if span > MAX_WINDOW_DAYS:
        raise Invalid.field("endDate", f"the window is {span} days; at most {MAX_WINDOW_DAYS}")
    return [(end - timedelta(days=i)).isoformat() for i in range(span)]


def _read(key: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in s3.decode(s3.get(key))]


def _records(days: list[str], name: str | None) -> list[dict[str, Any]]:
    keys = [key for day in days for key in s3.keys(s3.day_prefix(day))]
    lines: list[dict[str, Any]] = []
    with ThreadPoolExecutor(max_workers=READERS) as pool:
        for chunk in pool.map(_read, keys):
            lines.extend(chunk if name is None else (line for line in chunk if line.get("event") == name))
            if len(lines) > MAX_SCANNED_EVENTS:
                raise Invalid.field(
                    "days", f"more than {MAX_SCANNED_EVENTS} events in the window; ask for fewer days"
                )
    lines.sort(key=lambda line: (-int(line.get("timestamp", 0)), line.get("event", "")))
    return [logged_record(line) for line in lines]


def list_events(q: EventListQuery) -> Page[dict[str, Any]]:
    records = _records(window(q), None)
    return page_of(records, page=q.page, limit=q.limit)


def list_event_records(name: str, q: EventListQuery) -> Page[dict[str, Any]]:
    seen = {item["date"] for item in event_counters.for_event(name)}
    days = [day for day in window(q) if day in seen]
    records = _records(days, name) if days else []
    return page_of(records, page=q.page, limit=q.limit)


def summary(name: str) -> dict[str, Any]:
    items = event_counters.for_event(name)
    if not items:
        raise NotFound(f"No events named {name!r} have been logged.")
    first = [i["firstSeen"] for i in items if i["firstSeen"] is not None]
    last = [i["lastSeen"] for i in items if i["lastSeen"] is not None]
    keys: set[str] = set()
    for item in items:
        keys.update(item["metadataKeys"])
    return {
        "name": name,
        "totalCount": sum(i["count"] for i in items),
        "firstSeen": min(first) if first else None,
        "lastSeen": max(last) if last else None,
        "days": [{"date": i["date"], "count": i["count"], "lastSeen": i["lastSeen"]} for i in items],
        "metadataKeys": sorted(keys),
    }


def metrics_on(name: str, page: int, limit: int) -> Page[dict[str, Any]]:
    from expconsole.models.metrics import lineage
    from expconsole.services import metrics

    found = [metrics.builtin(name, "event_count"), metrics.builtin(name, "event_dau")]
    stored = [
        doc for doc in dynamo.list_all(kinds.METRIC) if name in lineage(doc.get("type", ""), doc)["events"]
    ]
    found.extend(metrics.present(doc) for doc in stored)
    return page_of(found, page=page, limit=limit).map(lambda metric: metric.model_dump(mode="json"))


def check_name(name: str) -> str:
    if not name or len(name) > 128:
        raise Invalid.field("eventName", "must be 1 to 128 characters")
    return name
