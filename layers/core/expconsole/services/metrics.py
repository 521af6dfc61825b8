"""Metrics: create (or dry-run), read, list, update, delete, versions, archive, and usage.

A metric's id is `<name>::<type>`; neither part changes after creation. What a definition
must hold per type is in `expconsole.models.metrics` (`definition_errors`); this module adds
what needs the store: referenced metrics must exist and must not form a cycle, ids are unique
(409), and a metric still used by experiments or other metrics cannot be deleted (409).

Built-ins: `<event>::event_count` and `<event>::event_dau` exist for every event name, logged
yet or not. They are synthesized on read (read-only, permanent, version 1, never stored), so
creating one is a 409 and changing, archiving or deleting one a 400.

Archive follows the peer: `schedule_archive` marks an active metric to be archived after a
grace period (`METRIC_ARCHIVE_GRACE_SECONDS` in the environment, one day by default; the
peer's "archive scheduled for next day"). The state is derived from the stored
`scheduledArchiveTime` on every read:

| state       | condition                         | legal actions                         |
|-------------|-----------------------------------|---------------------------------------|
| `active`    | nothing scheduled                 | `schedule_archive`                    |
| `scheduled` | `scheduledArchiveTime` in future  | `cancel_archive` (back to active)     |
| `archived`  | `scheduledArchiveTime` has passed | `unarchive` (back to active)          |

Any other move is a 400 naming the current state. Archived metrics leave lists unless
`includeArchived=true`, and cannot be updated until unarchived; they still exist for
experiments (`exists`). `isPermanent` metrics cannot be deleted.

Lists: `GET /metrics` and `GET /metrics/list` (the peer's path) answer the same, oldest
first; hidden metrics need `showHiddenMetrics=true`; `tags`, `type`, `creatorName`,
`creatorID`, `teamID` and the peer's `filters` (a JSON object, `{"tags": [...]}`) narrow them.
Lineage metrics are ids (`<name>::<type>`): names alone are not unique.

`GET /metrics/{id}/experiments` lists the experiments naming the metric in `primaryMetrics`,
`secondaryMetrics` or `otherMetrics`, shown as the experiments API shows them (status and
`isStale` derived), with the filters of the peer's experiment list: `layerID`, `idType`,
`teamID`, `status` (archived experiments only when asked for, as in every list), `targetAppID`,
`isStale` (true: only stale ones), `createdStartDate`/`createdEndDate` (UTC days, inclusive),
`experimentType`, `creatorName`, `creatorID`, `tags`. Deleting a metric counts every
experiment naming it, archived ones included.

For the experiments service: `exists(name, type)` and `get_or_builtin(metric_id)`, both one
read at most; `experiments_using(metric_id)` and `uses_metric(experiment, metric_id)` say which
experiments name a metric in `primaryMetrics`, `secondaryMetrics` or `otherMetrics`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import quote

from expconsole import config, kinds
from expconsole.errors import Conflict, Invalid, NotFound
from expconsole.models.metrics import (
    BUILTIN_TYPES,
    DEFINITION_FIELDS,
    METRIC_TYPES,
    ROLLUP_FIELDS,
    Metric,
    MetricCreate,
    MetricExperimentsQuery,
    MetricFields,
    MetricListQuery,
    MetricOwner,
    MetricState,
    MetricUpdate,
    StoredMetric,
    definition_errors,
    lineage,
    metric_id,
    normalized_definition,
    parse_date,
    referenced_metrics,
    split_id,
)
from expconsole.models.pagination import Page, page_of
from expconsole.services import entities
from expconsole.services.common.rules import cycle_from
from expconsole.services.entities import Doc, Presenter
from expconsole.store import dynamo

GRACE_ENV = "METRIC_ARCHIVE_GRACE_SECONDS"
DEFAULT_GRACE_SECONDS = 24 * 3600
EXPERIMENT_METRIC_LISTS = ("primaryMetrics", "secondaryMetrics", "otherMetrics")
BUILTIN_CREATOR = "SYSTEM"


def archive_grace_ms() -> int:
    """How long after `schedule_archive` the archive takes effect."""
    return int(config.seconds(GRACE_ENV, DEFAULT_GRACE_SECONDS) * 1000)


# --- built-ins, existence -------------------------------------------------------------------------


def _permalink(mid: str) -> str:
    return entities.permalink(kinds.METRIC, quote(mid, safe=":"))


def builtin(name: str, metric_type: str) -> Metric:
    """The synthesized built-in metric `<event>::event_count` or `<event>::event_dau`."""
    mid = metric_id(name, metric_type)
    what = "Number of" if metric_type == "event_count" else "Days with at least one"
    return Metric.model_validate(
        {
            "id": mid,
            "name": name,
            "type": metric_type,
            "directionality": "increase",
            "description": f"{what} `{name}` events per unit (built in for every event).",
            "isPermanent": True,
            "isReadOnly": True,
            "isHidden": False,
            "isVerified": True,
            "tags": [],
            "unitTypes": [],
            "metricEvents": [{"name": name, "type": "count", "criteria": []}],
            "lineage": {"events": [name], "metrics": []},
            "team": None,
            "teamID": None,
            "owner": {
                "ownerID": "",
                "ownerType": config.OWNER_TYPE,
                "ownerName": BUILTIN_CREATOR,
                "ownerEmail": "",
                "name": BUILTIN_CREATOR,
            },
            "isArchived": False,
            "scheduledArchiveTime": None,
            "version": 1,
            "permalink": _permalink(mid),
            "creatorID": None,
            "creatorName": BUILTIN_CREATOR,
            "creatorEmail": None,
            "createdTime": 0,
            "lastModifierID": None,
            "lastModifierName": None,
            "lastModifierEmail": None,
            "lastModifiedTime": 0,
        }
    )


def _builtin_parts(mid: str) -> tuple[str, str] | None:
    parts = split_id(mid)
    return parts if parts is not None and parts[1] in BUILTIN_TYPES else None


def exists(name: str, type: str) -> bool:
    """A stored metric (archived ones included) or a built-in: one read at most."""
    if not name or type not in METRIC_TYPES:
        return False
    if type in BUILTIN_TYPES:
        return True
    return dynamo.get(kinds.METRIC, metric_id(name, type)) is not None


def _find(mid: str) -> Metric | None:
    """The metric as the API returns it (stored or built-in), or None: one read at most."""
    parts = _builtin_parts(mid)
    if parts is not None:
        return builtin(*parts)
    if split_id(mid) is None:
        return None
    doc = dynamo.get(kinds.METRIC, mid)
    return present(doc) if doc is not None else None


def get_or_builtin(mid: str) -> Doc | None:
    """The metric as the API returns it (stored or built-in), as JSON, or None: one read at most."""
    found = _find(mid)
    return found.model_dump(mode="json") if found is not None else None


# --- presentation ------------------------------------------------------------------------------


def _scheduled(doc: Doc) -> int | None:
    scheduled: int | None = doc.get("_state", {}).get("scheduledArchiveTime")
    return scheduled


def _state_at(when: int | None, now: int | None = None) -> str:
    if when is None:
        return "active"
    return "archived" if when <= (entities.now_ms() if now is None else now) else "scheduled"


def state_of(doc: Doc, now: int | None = None) -> str:
    """`active`, `scheduled` (archive pending) or `archived`."""
    return _state_at(_scheduled(doc), now)


def present(doc: Doc, now: int | None = None) -> Metric:
    """The metric as the API returns it: stored fields plus lineage, archive state, permalink (in
    the answer's order, whatever order a write left: models.metrics)."""
    return Metric.model_validate(
        {
            **entities.public(doc),
            "lineage": lineage(doc["type"], doc),
            "isArchived": state_of(doc, now) == "archived",
            "scheduledArchiveTime": _scheduled(doc),
            "permalink": _permalink(doc["id"]),
        }
    )


def _owner(given: dict[str, str] | None) -> MetricOwner:
    owner = entities.owner_for(given)
    return MetricOwner.model_validate({**owner, "name": owner["ownerName"]})


# --- definitions and references -------------------------------------------------------------


def _check_references(mid: str | None, definition: Doc) -> None:
    """Component metrics and custom funnel steps must exist; components may not form a cycle."""
    errors: list[dict[str, str]] = []
    for index, ref in enumerate(definition.get("metricComponentMetrics") or []):
        ref_id = metric_id(ref["name"], ref["type"])
        if ref_id == mid:
            errors.append(
                {"field": f"metricComponentMetrics[{index}]", "message": "a metric cannot use itself"}
            )
        elif not exists(ref["name"], ref["type"]):
            errors.append(
                {"field": f"metricComponentMetrics[{index}]", "message": f"metric {ref_id!r} does not exist"}
            )
    for index, step in enumerate(definition.get("funnelEventList") or []):
        if step["type"] in BUILTIN_TYPES:
            continue
        ref_id = metric_id(step["name"], step["type"])
        if not exists(step["name"], step["type"]):
            errors.append(
                {
                    "field": f"funnelEventList[{index}].name",
                    "message": f"a step of type {step['type']!r} names a metric: {ref_id!r} does not exist",
                }
            )
    if errors:
        raise Invalid.fields(errors)
    refs = referenced_metrics(definition)
    if mid is None or not refs:
        return
    graph = {d["id"]: set(referenced_metrics(d)) for d in dynamo.list_all(kinds.METRIC)}
    graph[mid] = set(refs)
    path = cycle_from(mid, graph)
    if path:
        field = "metricComponentMetrics" if definition.get("metricComponentMetrics") else "funnelEventList"
        raise Invalid.field(field, "metrics would depend on each other in a cycle: " + " -> ".join(path))


def _definition(metric_type: str, fields: Doc) -> Doc:
    errors = definition_errors(metric_type, fields)
    if errors:
        raise Invalid.fields(errors)
    return normalized_definition(metric_type, fields)


# --- create, read, list ---------------------------------------------------------------------------


def _builtin_conflict(mid: str) -> Conflict:
    metric_type = mid.rpartition("::")[2]
    custom = {"event_count": "event_count_custom", "event_dau": "event_user"}[metric_type]
    return Conflict(
        f"Metric {mid!r} already exists: `<event>::event_count` and `<event>::event_dau` are built in "
        f"for every event name, so use {mid!r} as it is. To count events your own way (criteria, "
        f"rollup), create a metric of type `{custom}` instead.",
        [{"field": "type", "message": f"{metric_type!r} is built in; use {custom!r} for a custom metric"}],
    )


# Create fields stored as sent; the definition is stored as `normalized_definition` makes it.
_STORED_AS_SENT = frozenset(MetricCreate.model_fields.keys() & MetricFields.model_fields.keys()) - {
    *DEFINITION_FIELDS,
    *ROLLUP_FIELDS,
    "owner",
}


def create(body: MetricCreate) -> Metric:
    """Validate, then store (or, with `dryRun`, only return) the new metric."""
    mid = metric_id(body.name, body.type)
    if body.type in BUILTIN_TYPES:
        raise _builtin_conflict(mid)
    data = body.model_dump(mode="json")
    definition = _definition(body.type, data)
    _check_references(None, definition)
    metric = StoredMetric(
        **{field: data[field] for field in _STORED_AS_SENT},
        id=mid,
        **definition,
        owner=_owner(body.owner.as_owner() if body.owner else None),
        **entities.bookkeeping(),
        state=MetricState(scheduledArchiveTime=None),
    )
    if body.dryRun:
        if dynamo.get(kinds.METRIC, mid) is not None:
            raise Conflict(f"Metric with id {mid!r} already exists.")
        return present(metric.doc())
    return present(entities.insert(kinds.METRIC, mid, metric.doc()))


def get(mid: str) -> Metric:
    found = _find(mid)
    if found is None:
        raise NotFound(f"Metric {mid!r} not found.")
    return found


def _filter_tags(raw: str | None) -> set[str] | None:
    """The peer's `filters` parameter: a JSON object; `tags` (a string or list) is the filter."""
    if raw is None or not raw.strip():
        return None
    try:
        parsed = json.loads(raw)
    except ValueError:
        raise Invalid.field("filters", 'must be a JSON object such as {"tags": ["a"]}') from None
    if not isinstance(parsed, dict):
        raise Invalid.field("filters", 'must be a JSON object such as {"tags": ["a"]}')
    unknown = sorted(set(parsed) - {"tags"})
    if unknown:
        raise Invalid.field("filters", f"unknown filter {unknown[0]!r}; the filter available is 'tags'")
    tags = parsed.get("tags")
    if tags is None:
        return None
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise Invalid.field("filters", "tags must be a string or an array of strings")
    return set(tags)


def list_metrics(q: MetricListQuery) -> Page[Metric]:
    filter_tags = _filter_tags(q.filters)
    now = entities.now_ms()
    matching = []
    for doc in dynamo.list_all(kinds.METRIC):
        checks = (
            q.includeArchived or state_of(doc, now) != "archived",
            q.showHiddenMetrics or not doc["isHidden"],
            q.type is None or doc["type"] in q.type,
            q.tags is None or bool(set(q.tags) & set(doc["tags"])),
            filter_tags is None or bool(filter_tags & set(doc["tags"])),
            q.creatorName is None or doc["creatorName"] == q.creatorName,
            q.creatorID is None or doc["creatorID"] == q.creatorID,
            q.teamID is None or doc.get("teamID") == q.teamID,
        )
        if all(checks):
            matching.append(doc)
    return page_of(matching, page=q.page, limit=q.limit).map(lambda doc: present(doc, now))


def versions(mid: str, page: int, limit: int) -> Page[Metric]:
    parts = _builtin_parts(mid)
    if parts is not None:
        return page_of([builtin(*parts)], page=page, limit=limit)
    snapshots = dynamo.versions(kinds.METRIC, mid) if split_id(mid) else []
    if not snapshots:
        raise NotFound(f"Metric {mid!r} not found.")
    now = entities.now_ms()
    return page_of(snapshots, page=page, limit=limit).map(lambda doc: present(doc, now))


# --- updates -----------------------------------------------------------------------------------


def _refuse_builtin(mid: str, action: str) -> None:
    if _builtin_parts(mid) is not None:
        raise Invalid(f"Metric {mid!r} is built in and read-only: it cannot be {action}.")


def _apply(metric: StoredMetric, body: MetricUpdate) -> None:
    if _state_at(metric.state.scheduledArchiveTime) == "archived":
        raise Invalid(f"Metric {metric.id!r} is archived: unarchive it before changing it.")
    sent = body.changes()
    for key in ("version", "dryRun"):
        sent.pop(key, None)
    for key in ("name", "type"):
        if key in sent and sent.pop(key) != getattr(metric, key):
            raise Invalid.field(
                key, f"cannot change (it is part of the id {metric.id!r}); create a new metric instead"
            )
    if "owner" in sent:
        assert body.owner is not None
        sent["owner"] = _owner(body.owner.as_owner())
    names = (*DEFINITION_FIELDS, *ROLLUP_FIELDS)
    fields = {key: getattr(metric, key) for key in names}
    for key in names:
        if key in sent:
            fields[key] = sent.pop(key)
    definition = _definition(metric.type, fields)
    if any(definition.get(k) != getattr(metric, k) for k in names):
        _check_references(metric.id, definition)
    metric.set_definition(definition)
    metric.set_fields(sent)


def update(mid: str, body: MetricUpdate) -> Metric:
    """Apply the sent fields; with `dryRun`, return the result without storing it."""
    _refuse_builtin(mid, "updated")
    if not body.dryRun:
        changed = entities.update_stored(
            kinds.METRIC, mid, StoredMetric, lambda m: _apply(m, body), body.version
        )
        return present(changed)
    current = entities.load(kinds.METRIC, mid)
    version = int(current["version"])
    if body.version is not None and body.version != version:
        raise Conflict(
            f"Metric {mid!r} is at version {version}, not {body.version}: it was changed since you read "
            "it; read it again and retry.",
            [{"field": "version", "message": f"stale: the stored version is {version}"}],
        )
    metric = StoredMetric.read(current)
    _apply(metric, body)
    doc = metric.doc()
    doc["version"] = version + 1
    doc["lastModifiedTime"] = max(entities.now_ms(), int(current["lastModifiedTime"]))
    return present(doc)


def _describe(users: list[tuple[str, str]]) -> str:
    names = [f"{label} {uid!r}" for label, uid in users[:10]]
    more = f" and {len(users) - 10} more" if len(users) > 10 else ""
    return ", ".join(names) + more


def metrics_using(mid: str) -> list[Doc]:
    """Stored metrics built on this one (components and custom funnel steps)."""
    return [d for d in dynamo.list_all(kinds.METRIC) if mid in referenced_metrics(d)]


def delete(mid: str) -> None:
    _refuse_builtin(mid, "deleted")
    doc = entities.load(kinds.METRIC, mid)
    if doc.get("isPermanent"):
        raise Invalid.field(
            "isPermanent", f"metric {mid!r} is permanent: update isPermanent to false before deleting it"
        )
    users = [("experiment", e["id"]) for e in experiments_using(mid)]
    users += [("metric", m["id"]) for m in metrics_using(mid)]
    if users:
        raise Conflict(f"Metric {mid!r} is used by {_describe(users)}; remove those references first.")
    entities.remove(kinds.METRIC, mid, doc)


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _illegal(mid: str, state: str, when: int | None, action: str, hint: str) -> Invalid:
    detail = f" (archive scheduled for {_when(when or 0)})" if state == "scheduled" else ""
    return Invalid(f"Cannot {action} metric {mid!r}: its archive state is {state!r}{detail}; {hint}.")


def _schedule(
    mid: str, action: str, legal: str, hints: dict[str, str], when: Callable[[], int | None]
) -> Metric:
    """Move the metric's archive schedule to `when()`, from the `legal` state only (else a 400
    with the hint for the state it is in)."""
    _refuse_builtin(mid, "archived")

    def change(metric: StoredMetric) -> None:
        scheduled = metric.state.scheduledArchiveTime
        state = _state_at(scheduled)
        if state != legal:
            raise _illegal(mid, state, scheduled, action, hints[state])
        metric.state = metric.state.model_copy(update={"scheduledArchiveTime": when()})

    return present(entities.update_stored(kinds.METRIC, mid, StoredMetric, change))


def schedule_archive(mid: str) -> Metric:
    hints = {"scheduled": "use cancel_archive to keep it", "archived": "it is archived already"}
    return _schedule(
        mid, "schedule the archive of", "active", hints, lambda: entities.now_ms() + archive_grace_ms()
    )


def cancel_archive(mid: str) -> Metric:
    hints = {"active": "no archive is scheduled", "archived": "use unarchive to restore it"}
    return _schedule(mid, "cancel the archive of", "scheduled", hints, lambda: None)


def unarchive(mid: str) -> Metric:
    hints = {"scheduled": "use cancel_archive to keep it", "active": "it is not archived"}
    return _schedule(mid, "unarchive", "archived", hints, lambda: None)


# --- experiments using a metric --------------------------------------------------------------------


def _entry_id(entry: Any) -> str | None:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict) and entry.get("name") and entry.get("type"):
        return metric_id(str(entry["name"]), str(entry["type"]))
    return None


def uses_metric(experiment: Doc, mid: str) -> bool:
    """Whether an experiment names the metric among its primary, secondary or other metrics."""
    return any(
        _entry_id(entry) == mid for key in EXPERIMENT_METRIC_LISTS for entry in experiment.get(key) or []
    )


def experiments_using(mid: str) -> list[Doc]:
    """Stored experiments (any status) that use the metric, oldest first."""
    return [doc for doc in dynamo.list_all(kinds.EXPERIMENT) if uses_metric(doc, mid)]


def _day_ms(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _experiment_matches(exp: Doc, q: MetricExperimentsQuery, start: int | None, end: int | None) -> bool:
    created = int(exp.get("createdTime") or 0)
    checks = (
        exp.get("status") in q.status if q.status else exp.get("status") != "archived",
        q.layerID is None or exp.get("layerID") == q.layerID,
        q.idType is None or exp.get("idType") in q.idType,
        q.teamID is None or exp.get("teamID") == q.teamID,
        q.targetAppID is None or q.targetAppID in _as_list(exp.get("targetApps")),
        not q.isStale or exp.get("isStale") is True,
        start is None or created >= start,
        end is None or created < end,
        q.experimentType is None or exp.get("experimentType", "BASE") in q.experimentType,
        q.creatorName is None or exp.get("creatorName") == q.creatorName,
        q.creatorID is None or exp.get("creatorID") == q.creatorID,
        q.tags is None or bool(set(q.tags) & set(_as_list(exp.get("tags")))),
    )
    return all(checks)


def list_experiments(mid: str, q: MetricExperimentsQuery, present_experiment: Presenter) -> Page[Doc]:
    """Experiments using the metric, each as `present_experiment` shows it (the experiments
    service's `present`, with its derived status and `isStale`; passed in: the experiments
    service depends on this one, not the other way)."""
    get(mid)  # 404 for an unknown metric
    first, last = parse_date(q.createdStartDate), parse_date(q.createdEndDate)
    if first is not None and last is not None and last < first:
        raise Invalid.field("createdEndDate", "must not be before createdStartDate")
    start = _day_ms(first) if first else None
    end = _day_ms(last + timedelta(days=1)) if last else None
    now = entities.now_ms()
    shown = [present_experiment(doc, now=now) for doc in experiments_using(mid)]
    matching = [exp for exp in shown if _experiment_matches(exp, q, start, end)]
    return page_of(matching, page=q.page, limit=q.limit)
