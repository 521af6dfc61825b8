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
import os
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
    MetricListQuery,
    MetricUpdate,
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
    raw = os.environ.get(GRACE_ENV)
    try:
        seconds = float(raw) if raw is not None else DEFAULT_GRACE_SECONDS
    except ValueError:
        seconds = DEFAULT_GRACE_SECONDS
    return int(max(seconds, 0) * 1000)


# --- built-ins, existence -------------------------------------------------------------------------


def _permalink(mid: str) -> str:
    return entities.permalink(kinds.METRIC, quote(mid, safe=":"))


def builtin(name: str, metric_type: str) -> Doc:
    """The synthesized built-in metric `<event>::event_count` or `<event>::event_dau`."""
    mid = metric_id(name, metric_type)
    what = "Number of" if metric_type == "event_count" else "Days with at least one"
    return _ordered(
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


def get_or_builtin(mid: str) -> Doc | None:
    """The metric as the API returns it (stored or built-in), or None: one read at most."""
    parts = _builtin_parts(mid)
    if parts is not None:
        return builtin(*parts)
    if split_id(mid) is None:
        return None
    doc = dynamo.get(kinds.METRIC, mid)
    return present(doc) if doc is not None else None


# --- presentation ------------------------------------------------------------------------------


def _scheduled(doc: Doc) -> int | None:
    return doc.get("_state", {}).get("scheduledArchiveTime")


def state_of(doc: Doc, now: int | None = None) -> str:
    """`active`, `scheduled` (archive pending) or `archived`."""
    when = _scheduled(doc)
    if when is None:
        return "active"
    return "archived" if when <= (entities.now_ms() if now is None else now) else "scheduled"


def present(doc: Doc, now: int | None = None) -> Doc:
    """The metric as the API returns it: stored fields plus lineage, archive state, permalink."""
    out = entities.public(doc)
    out["lineage"] = lineage(doc["type"], doc)
    out["isArchived"] = state_of(doc, now) == "archived"
    out["scheduledArchiveTime"] = _scheduled(doc)
    out["permalink"] = _permalink(doc["id"])
    return _ordered(out)


def _ordered(metric: Doc) -> Doc:
    """Fields in the response model's order (then any others), whatever order a write left."""
    known = {key: metric[key] for key in Metric.model_fields if key in metric}
    return {**known, **{k: v for k, v in metric.items() if k not in known}}


def _owner(given: dict[str, str] | None) -> Doc:
    owner = entities.owner_for(given)
    return {**owner, "name": owner["ownerName"]}


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


def create(body: MetricCreate) -> Doc:
    """Validate, then store (or, with `dryRun`, only return) the new metric."""
    mid = metric_id(body.name, body.type)
    if body.type in BUILTIN_TYPES:
        raise _builtin_conflict(mid)
    data = body.model_dump(mode="json")
    definition = _definition(body.type, data)
    _check_references(None, definition)
    doc: Doc = {
        "id": mid,
        "name": body.name,
        "type": body.type,
        "directionality": body.directionality,
        "description": body.description,
        "isPermanent": body.isPermanent,
        "isReadOnly": body.isReadOnly,
        "isHidden": body.isHidden,
        "isVerified": body.isVerified,
        "tags": body.tags,
        "unitTypes": body.unitTypes,
        **definition,
        "team": body.team,
        "teamID": body.teamID,
        "owner": _owner(body.owner.as_owner() if body.owner else None),
        **entities.bookkeeping(),
        "_state": {"scheduledArchiveTime": None},
    }
    if body.dryRun:
        if dynamo.get(kinds.METRIC, mid) is not None:
            raise Conflict(f"Metric with id {mid!r} already exists.")
        return present(doc)
    return present(entities.insert(kinds.METRIC, mid, doc))


def get(mid: str) -> Doc:
    found = get_or_builtin(mid)
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


def list_metrics(q: MetricListQuery) -> Page[Doc]:
    filter_tags = _filter_tags(q.filters)
    now = entities.now_ms()
    matching = []
    for doc in dynamo.list_all(kinds.METRIC):
        metric = present(doc, now)
        checks = (
            q.includeArchived or not metric["isArchived"],
            q.showHiddenMetrics or not metric["isHidden"],
            q.type is None or metric["type"] in q.type,
            q.tags is None or bool(set(q.tags) & set(metric["tags"])),
            filter_tags is None or bool(filter_tags & set(metric["tags"])),
            q.creatorName is None or metric["creatorName"] == q.creatorName,
            q.creatorID is None or metric["creatorID"] == q.creatorID,
            q.teamID is None or metric.get("teamID") == q.teamID,
        )
        if all(checks):
            matching.append(metric)
    return page_of(matching, page=q.page, limit=q.limit)


def versions(mid: str, page: int, limit: int) -> Page[Doc]:
    parts = _builtin_parts(mid)
    if parts is not None:
        shown = [builtin(*parts)]
    else:
        snapshots = dynamo.versions(kinds.METRIC, mid) if split_id(mid) else []
        if not snapshots:
            raise NotFound(f"Metric {mid!r} not found.")
        now = entities.now_ms()
        shown = [present(s, now) for s in snapshots]
    return page_of(shown, page=page, limit=limit)


# --- updates -----------------------------------------------------------------------------------


def _refuse_builtin(mid: str, action: str) -> None:
    if _builtin_parts(mid) is not None:
        raise Invalid(f"Metric {mid!r} is built in and read-only: it cannot be {action}.")


def _apply(doc: Doc, body: MetricUpdate) -> None:
    if state_of(doc) == "archived":
        raise Invalid(f"Metric {doc['id']!r} is archived: unarchive it before changing it.")
    sent = body.changes()
    for key in ("version", "dryRun"):
        sent.pop(key, None)
    for key in ("name", "type"):
        if key in sent and sent.pop(key) != doc[key]:
            raise Invalid.field(
                key, f"cannot change (it is part of the id {doc['id']!r}); create a new metric instead"
            )
    if "owner" in sent:
        assert body.owner is not None
        sent["owner"] = _owner(body.owner.as_owner())
    fields = {key: doc.get(key) for key in (*DEFINITION_FIELDS, *ROLLUP_FIELDS)}
    for key in (*DEFINITION_FIELDS, *ROLLUP_FIELDS):
        if key in sent:
            fields[key] = sent.pop(key)
    definition = _definition(doc["type"], fields)
    if any(definition.get(k) != doc.get(k) for k in (*DEFINITION_FIELDS, *ROLLUP_FIELDS)):
        _check_references(doc["id"], definition)
    for key in (*DEFINITION_FIELDS, *ROLLUP_FIELDS):
        doc.pop(key, None)
    doc.update(definition)
    doc.update(sent)


def update(mid: str, body: MetricUpdate) -> Doc:
    """Apply the sent fields; with `dryRun`, return the result without storing it."""
    _refuse_builtin(mid, "updated")
    if not body.dryRun:
        return present(entities.update(kinds.METRIC, mid, lambda d: _apply(d, body), body.version))
    current = entities.load(kinds.METRIC, mid)
    version = int(current["version"])
    if body.version is not None and body.version != version:
        raise Conflict(
            f"Metric {mid!r} is at version {version}, not {body.version}: it was changed since you read "
            "it; read it again and retry.",
            [{"field": "version", "message": f"stale: the stored version is {version}"}],
        )
    doc = {**current}
    _apply(doc, body)
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


def _illegal(mid: str, doc: Doc, action: str, hint: str) -> Invalid:
    state = state_of(doc)
    detail = f" (archive scheduled for {_when(_scheduled(doc) or 0)})" if state == "scheduled" else ""
    return Invalid(f"Cannot {action} metric {mid!r}: its archive state is {state!r}{detail}; {hint}.")


def schedule_archive(mid: str) -> Doc:
    _refuse_builtin(mid, "archived")

    def change(doc: Doc) -> None:
        state = state_of(doc)
        if state != "active":
            hint = "use cancel_archive to keep it" if state == "scheduled" else "it is archived already"
            raise _illegal(mid, doc, "schedule the archive of", hint)
        when = entities.now_ms() + archive_grace_ms()
        doc["_state"] = {**doc.get("_state", {}), "scheduledArchiveTime": when}

    return present(entities.update(kinds.METRIC, mid, change))


def cancel_archive(mid: str) -> Doc:
    _refuse_builtin(mid, "archived")

    def change(doc: Doc) -> None:
        state = state_of(doc)
        if state != "scheduled":
            hint = "no archive is scheduled" if state == "active" else "use unarchive to restore it"
            raise _illegal(mid, doc, "cancel the archive of", hint)
        doc["_state"] = {**doc.get("_state", {}), "scheduledArchiveTime": None}

    return present(entities.update(kinds.METRIC, mid, change))


def unarchive(mid: str) -> Doc:
    _refuse_builtin(mid, "archived")

    def change(doc: Doc) -> None:
        state = state_of(doc)
        if state != "archived":
            hint = "use cancel_archive to keep it" if state == "scheduled" else "it is not archived"
            raise _illegal(mid, doc, "unarchive", hint)
        doc["_state"] = {**doc.get("_state", {}), "scheduledArchiveTime": None}

    return present(entities.update(kinds.METRIC, mid, change))


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
