"""Events a metric or experiment names that have never been logged: warnings, and pulse health.

A built-in `<event>::event_count` exists for every name, logged or not, so that an experiment can
be set up before its events flow; but a typo (`purchse::event_count`) is then accepted silently
and its results stay empty. So a create or update that names an event never logged answers with
a `warning` naming it and the closest logged names, and pulse lists such metrics in
`missingMetrics` and fails the metrics health check until the events arrive.

"Logged" is what the ingestion counters saw (store.event_counters): one GSI1 query per name. The
closest names come from the counters of the last `NEARBY_DAYS` days (one query per day, made
together), read only when a name is unknown.
"""

from __future__ import annotations

import difflib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from expconsole import kinds
from expconsole.store import dynamo, event_counters

if TYPE_CHECKING:  # the experiments function imports this module: its cold start needs no pulse model
    from expconsole.models.pulse import PulseHealth

NEARBY_DAYS = 14
CLOSEST = 3
_MAX_DEPTH = 8  # components of components: metrics form no cycles (services.metrics), this bounds reads


def metric_events(mid: str, depth: int = 0) -> list[str]:
    """Event names a metric (built-in or stored, by id) counts, through its component metrics."""
    # models.metrics creates some 25 model classes: imported when an experiment's metrics are
    # read, not at the import of every function that may warn (the experiments function's cold start).
    from expconsole.models.metrics import split_id

    parts = split_id(mid)
    if parts is None or depth > _MAX_DEPTH:
        return []
    name, metric_type = parts
    if metric_type in ("event_count", "event_dau"):
        return [name]
    doc = dynamo.get(kinds.METRIC, mid)
    return definition_events(doc, depth) if doc is not None else []


def definition_events(definition: dict[str, Any], depth: int = 0) -> list[str]:
    """Event names a metric definition names, directly or through its component metrics."""
    from expconsole.models.metrics import lineage  # see metric_events

    named = lineage(str(definition.get("type", "")), definition)
    events = list(named["events"])
    for component in named["metrics"]:
        events.extend(metric_events(component, depth + 1))
    return list(dict.fromkeys(events))


def unlogged(names: list[str]) -> list[str]:
    """The names (in order) the ingestion counters never saw."""
    return [name for name in dict.fromkeys(names) if not event_counters.for_event(name)]


def recent_names(today: datetime | None = None) -> list[str]:
    """Event names the counters saw in the last NEARBY_DAYS days: one query per day, all at once,
    so that a warning waits for about one round trip, not fifteen in a row."""
    # Imported here: only a warning needs threads, and most requests warn of nothing.
    from concurrent.futures import ThreadPoolExecutor

    today = today or datetime.now(UTC)
    days = [(today - timedelta(days=offset)).date().isoformat() for offset in range(-1, NEARBY_DAYS)]
    with ThreadPoolExecutor(max_workers=len(days)) as pool:
        counters = list(pool.map(event_counters.for_day, days))
    return sorted({str(item["name"]) for day in counters for item in day if item.get("name")})


def closest(name: str, names: list[str]) -> list[str]:
    """Up to CLOSEST of `names` like `name` (difflib's ratio)."""
    return difflib.get_close_matches(name, names, n=CLOSEST, cutoff=0.5)


class _Warnings:
    """Warnings of one request: the recent names are read once, and only if some event is unknown."""

    def __init__(self) -> None:
        self._names: list[str] | None = None
        self.items: list[dict[str, Any]] = []

    def add(self, field: str, event: str) -> None:
        if self._names is None:
            self._names = recent_names()
        self.items.append(_warning(field, event, closest(event, self._names)))


def _warning(field: str, event: str, near: list[str]) -> dict[str, Any]:
    hint = f"; closest logged: {', '.join(near)}" if near else "; no logged event name is close"
    return {
        "field": field,
        "event": event,
        "closest": near,
        "message": (
            f"event {event!r} has never been logged, so this metric has no data until it is{hint}. "
            "If it is a typo, correct it; if the events are not flowing yet, ignore this."
        ),
    }


def metric_warnings(definition: dict[str, Any]) -> list[dict[str, Any]]:
    """Warnings for a stored or about-to-be-stored metric whose events were never logged."""
    warnings = _Warnings()
    for event in unlogged(definition_events(definition)):
        warnings.add(definition.get("id") or "metric", event)
    return warnings.items


def experiment_warnings(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Warnings for an experiment's metrics that count events never logged."""
    warnings = _Warnings()
    warned: set[str] = set()
    for field in ("primaryMetrics", "secondaryMetrics"):
        for index, ref in enumerate(doc.get(field) or []):
            if not isinstance(ref, dict):
                continue
            mid = f"{ref.get('name')}::{ref.get('type')}"
            for event in unlogged([e for e in metric_events(mid) if e not in warned]):
                warned.add(event)
                warnings.add(f"{field}[{index}]", event)
    return warnings.items


def unlogged_metrics(metric_ids: list[str]) -> list[str]:
    """The metric ids (in order) that count at least one event never logged."""
    return [mid for mid in metric_ids if unlogged(metric_events(mid))]


def amend_health(health: PulseHealth, metric_ids: list[str]) -> PulseHealth:
    """Pulse health with metrics on never-logged events added to `missingMetrics`, and the metrics
    check (and so the overall status) FAILED while there are any (`PulseHealth.with_never_logged`)."""
    return health.with_never_logged(unlogged_metrics(metric_ids))
