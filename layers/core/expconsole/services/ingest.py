"""Event ingestion: validate a request (all or nothing), store it by day, count it once.

Steps: the raw body's size is checked before parsing (413 past 1 MiB), then the number of
events (413 past 2,000); every event is validated (models.events.check_event) and any error
rejects the whole request with a 400 naming each bad event as `events[<i>].<field>`.

Object keys (docs/architecture.md, 'Events by day'): the request's events are serialised canonically
(`json.dumps(sort_keys=True)`), hashed with SHA-256, and each UTC day the events fall on gets
`events/date=<day>/<sha256(digest + day)[:40]>.jsonl.gz`. The rule is: an identical request
(the same events in the same order, whatever the JSON whitespace, key order or envelope —
a single object, an array or `{"events": [...]}`) is a retry and rewrites the same objects;
to send the same event twice, send it twice in one batch or in two batches that differ. One
caveat: events without a timestamp take the receipt time, so a retry that crosses midnight
UTC lands them in the next day's object.

Order of writes: every object is written first; only when all are stored are the counters
updated (store.event_counters: one transaction per object with a conditional marker, so a
retry counts nothing twice). A failed S3 write is a 503 before any counting: the objects
already written are rewritten under the same keys by the retry, and the counters then count
each object once. A failed counter transaction is a 503 too; the retry rewrites the objects
(same keys) and counts the objects whose markers are missing. 202 means every object and
every count is stored.

That write (lines → day objects → puts → counters) is `store_lines`, shared with bulk import
(services.imports), which names its objects from the input file's content and chunk instead.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from expconsole import observability
from expconsole.errors import Invalid, TooLarge, Unavailable
from expconsole.models.events import (
    MAX_BODY_BYTES,
    MAX_ERRORS,
    MAX_EVENTS,
    SOURCE_WEBHOOK,
    check_event,
)
from expconsole.store import event_counters, s3
from expconsole.store.event_counters import NameTally

logger = observability.logger
DAY_MS = 86_400_000
_DAYS: dict[int, str] = {}


def _day(ms: int) -> str:
    index = ms // DAY_MS
    day = _DAYS.get(index)
    if day is None:
        day = _DAYS[index] = datetime.fromtimestamp(index * 86_400, UTC).date().isoformat()
    return day


def _no_constant(name: str) -> Any:
    """NaN and Infinity are not JSON (RFC 8259); Python's parser would accept them."""
    raise ValueError(f"{name} is not a JSON number")


def parse(body: str | bytes | None) -> list[Any]:
    """The request's events as sent (not validated yet): size, JSON and envelope checked."""
    if body is None or len(body) == 0:
        raise Invalid.field("body", "is required: one event, an array of events or {events: [...]}")
    size = len(body) if isinstance(body, bytes) else len(body.encode("utf-8"))
    if size > MAX_BODY_BYTES:
        raise TooLarge(
            f"Request body is {size} bytes; the limit is {MAX_BODY_BYTES} bytes (1 MiB) per request. "
            "Split the events into smaller batches."
        )
    try:
        data = json.loads(body, parse_constant=_no_constant)
    except ValueError as exc:
        raise Invalid.field("body", f"is not valid JSON ({exc})") from None
    except RecursionError:
        raise Invalid.field("body", "nests too deeply (limit near 1,000 levels)") from None
    if isinstance(data, dict) and "events" in data and "event" not in data:
        if len(data) != 1:
            extra = ", ".join(sorted(k for k in data if k != "events"))
            raise Invalid.field("body", f"a batch object holds only `events` (unknown: {extra})")
        events = data["events"]
        if not isinstance(events, list):
            raise Invalid.field("events", "must be an array of events")
    elif isinstance(data, list):
        events = data
    elif isinstance(data, dict):
        events = [data]
    else:
        raise Invalid.field("body", "must be one event object, an array of events or {events: [...]}")
    if not events:
        raise Invalid.field("events", "must hold at least one event")
    if len(events) > MAX_EVENTS:
        raise TooLarge(
            f"{len(events)} events in one request; the limit is {MAX_EVENTS} events per request. "
            "Split them into smaller batches."
        )
    return events


def validate(events: list[Any], now_ms: int) -> list[dict[str, Any]]:
    """Every event as its stored line, or a 400 naming each bad event (nothing is stored)."""
    errors: list[dict[str, str]] = []
    lines: list[dict[str, Any]] = []
    for index, raw in enumerate(events):
        line = check_event(index, raw, now_ms, errors)
        if line is not None:
            lines.append(line)
    if errors:
        shown = errors[:MAX_ERRORS]
        if len(errors) > MAX_ERRORS:
            shown.append({"field": "", "message": f"... and {len(errors) - MAX_ERRORS} more errors"})
        raise Invalid.fields(shown)
    return lines


def ingest(
    body: str | bytes | None, now_ms: int | None = None, source: str = SOURCE_WEBHOOK
) -> tuple[int, int]:
    """Store a request's events; (accepted: newly stored, duplicates: already stored by an
    identical earlier request). Raises Invalid, TooLarge or Unavailable."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    events = parse(body)
    lines = validate(events, now)
    try:
        text = json.dumps(events, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        canonical = text.encode("utf-8")
    except UnicodeEncodeError:
        raise Invalid.field(
            "body", "holds a lone UTF-16 surrogate escape (\\ud800 to \\udfff unpaired), which is not text"
        ) from None
    digest = hashlib.sha256(canonical).hexdigest()
    try:
        stored = store_lines(lines, digest, source, now)
    except StoreFailed as exc:
        logger.warning("Event storage failed", extra={"stage": exc.stage}, exc_info=exc.__cause__)
        if exc.stage == "objects":
            message = (
                "Events storage failed; nothing was counted. Retry the same request: it rewrites the "
                "same objects and stores nothing twice."
            )
        else:
            message = (
                "Events were stored but their counters failed. Retry the same request: it rewrites the "
                "same objects and counts each once."
            )
        observability.count("IngestFailures")
        raise Unavailable(message) from exc.__cause__
    observability.count("EventsAccepted", len(lines) - stored.duplicates)
    observability.count("EventsDuplicate", stored.duplicates)
    return len(lines) - stored.duplicates, stored.duplicates


class StoreFailed(Exception):
    """A write of store_lines failed; `stage` says which (the cause is chained)."""

    def __init__(self, stage: Literal["objects", "counters"]) -> None:
        super().__init__(f"storing the event {stage} failed")
        self.stage = stage


def object_name(seed: str, day: str) -> str:
    """The name of the object holding one day of a batch: it derives from the batch's content."""
    return hashlib.sha256(f"{seed}/{day}".encode()).hexdigest()[:40]


@dataclass
class Stored:
    """What store_lines wrote: the object keys, and how many lines were already stored (their
    object counted by an earlier, identical write: a retry or a re-import)."""

    keys: list[str]
    duplicates: int


def store_lines(lines: list[dict[str, Any]], seed: str, source: str, now_ms: int) -> Stored:
    """Store validated lines (check_event's): one object per UTC day, put, then counted once.

    The write path shared by ingestion (a request) and bulk import (a chunk of a file). Each
    line gets `source` and `receivedTime`; the day's object is named by `object_name(seed,
    day)`, so storing the same seed again rewrites the same objects and counts nothing twice.
    Every object is put before any is counted (module docstring). Returns the keys written and
    the lines already stored; raises StoreFailed (stage `objects` or `counters`, the error chained).
    """
    by_day: dict[str, list[str]] = {}
    tallies: dict[str, dict[str, NameTally]] = {}
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    for line in lines:
        line["source"] = source
        line["receivedTime"] = now_ms
        day = _day(line["timestamp"])
        day_lines = by_day.get(day)
        if day_lines is None:
            day_lines = by_day[day] = []
            tallies[day] = {}
        day_lines.append(dumps(line))
        tally = tallies[day].get(line["event"])
        if tally is None:
            tally = tallies[day][line["event"]] = NameTally()
        tally.count += 1
        if line["metadata"]:
            tally.metadata_keys.update(line["metadata"])

    objects = []
    for day, day_lines in sorted(by_day.items()):
        name = object_name(seed, day)
        objects.append((day, name, s3.object_key(day, name), s3.encode(day_lines)))

    try:
        for _, _, key, data in objects:
            s3.put(key, data)
    except Exception as exc:
        raise StoreFailed("objects") from exc
    duplicates = 0
    try:
        for day, name, _key, _data in objects:
            if event_counters.record(day, name, tallies[day], now_ms) == 0:
                duplicates += len(by_day[day])
    except Exception as exc:
        raise StoreFailed("counters") from exc
    return Stored([key for _, _, key, _ in objects], duplicates)
