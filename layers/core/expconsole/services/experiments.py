"""Experiments: create, read, list, update, delete, versions, and the lifecycle state machine.

States and the moves between them: `ALLOWED_FROM` (the states each action is allowed from) and
`LEADS_TO` (where it leads) below, the one table of the state machine; any other move is a 400
naming the current state. `python -m expconsole_tools.state_diagram` draws it (Mermaid).

`experiment_stopped` and `assignment_stopped` are valid statuses (filters, stored values) that
no endpoint enters; where they occur they are treated like `active` ("running").

Rules chosen where the contract is silent:

- **start** (setup → active): sets `startTime` (now) and clears `endTime`; the optional body's
  `analysisEndTime` is stored.
- **schedule_start** (setup only): `scheduledTime` in whole milliseconds, in the future and at
  most a year ahead; stored as `scheduledStartTime`. Once it has passed, the experiment *is*
  active with `startTime` = the scheduled time: every read shows it so, and the next write
  stores it. Scheduling again replaces the time; `start` starts at once; archive/reset cancel.
- **make_decision** (running → decision_made): `id` must be a group id (400 otherwise); sets
  `launchedGroupID`, `decisionReason`, `decisionTime` and `endTime` (now); `removeTargeting:
  true` clears `targetingGateID` and the inline targeting rules (launch to everyone).
- **abandon** (running → abandoned): sets `decisionReason`, `decisionTime`, `endTime`.
- **reset** (running, decision_made, abandoned → setup): back to design: clears `startTime`,
  `endTime`, `decisionTime`, `launchedGroupID` and `decisionReason`; the design is kept.
- **archive** (setup, decision_made, abandoned → archived; a running experiment must be
  decided or abandoned first): remembers the state it left; **unarchive** returns to it.
- **restart_as_new** (any state but setup: a setup experiment is edited, not restarted): a
  new experiment (id from the new name) in setup, copying the design — everything but id,
  name, lifecycle fields and bookkeeping; groups keep their ids (so `controlGroupID` and SPRT
  settings stay valid) and are all enabled again. The original is unchanged. Answers 201.
- **disable_groups / enable_groups** (setup or running): names matched case-insensitively;
  an unknown name is a 400; the control group (`controlGroupID`, else the first group) cannot
  be disabled, and at least one other group must stay enabled. Answers 200 (an action).
- **delete**: any state but running (decide or abandon first); a 409 while a holdout lists it
  (its own `holdoutIDs`, or a holdout's `experimentIDs`): remove it from the holdout first. The
  delete is conditional on the version read, so a holdout adding it at the same time makes
  one of the two fail.
- **holdoutIDs** is one side of the holdout-experiment link (`expconsole.services.holdouts`):
  creating, restarting or updating an experiment with holdouts writes the experiment and every
  holdout it joins or leaves in one transaction; a 400 names `holdoutIDs[i]` when that holdout
  does not exist or is archived. `restart_as_new` keeps the original's holdouts.
- **layerID**: the experiment must fit its layer (`expconsole.services.layer_buckets.check_placement`:
  the layer's id type, buckets disjoint from the other non-archived experiments of the layer,
  claims within its 1000 buckets); checked when `layerID`, `userBuckets`, `allocation` or
  `idType` is set or changes, on restart_as_new and on unarchive.
- **ids** default to the name in lower case with spaces as underscores; `qualifying_events`,
  `assignment_source(s)` and `entity_propert(y|ies)` are refused (other routes live there).
  Names need not be unique; ids are (409).

Editable by state: everything in `setup`. Once started (running, decision_made, abandoned) the
design that assigns units is locked: `groups` (ids, names, sizes, parameter values, disabled —
use disable/enable_groups), `allocation`, `userBuckets`, `idType`, `layerID`,
`controlGroupID` and `experimentType`; sending them back unchanged is fine. Everything else
(description, hypothesis, metrics, statistics settings, targeting, tags, ...) stays editable.
`launchedGroupID` changes only in decision_made. Nothing changes while archived. `status` in a
body may only restate the current status (create: `setup`).

Derived on every read:

- `isStale`: running longer than `duration` + 7 days; or decided/abandoned more than 30 days
  ago and not archived; or in setup, never scheduled, for more than 90 days.
- `qualityScore`: see `expconsole.services.quality`.
- `inlineTargetingRulesJSON`: the stored `inlineTargetingRules` as compact JSON text.
- `healthCheckStatus` / `healthChecks`: what pulse stored (under `_health`), else `PASSED`
  with one `has_checks` entry in `WAITING` saying no pulse data has been loaded yet (no check
  has run, so none has failed).
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import json
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from expconsole import kinds
from expconsole.errors import Conflict, Invalid
from expconsole.models.common import Owner
from expconsole.models.experiments import (
    METRIC_LISTS,
    NULLABLE_FIELDS,
    Experiment,
    ExperimentListQuery,
    InlineRuleOut,
    design_errors,
)
from expconsole.models.pagination import Page, page_of
from expconsole.models.rules import RulePatch
from expconsole.models.validation import field_errors
from expconsole.services import entities, layer_buckets, quality
from expconsole.services.common import patch as partial
from expconsole.services.common import rules as rules_common
from expconsole.services.common import size
from expconsole.services.entities import Doc
from expconsole.store import dynamo

if TYPE_CHECKING:
    from expconsole.models.experiments_requests import (
        AbandonBody,
        ExperimentCreate,
        ExperimentPatch,
        ExperimentStartBody,
        ExperimentUpdate,
        InlineTargetingRule,
        MakeDecisionBody,
    )
    from expconsole.models.experiments_stored import StoredExperiment

KIND = kinds.EXPERIMENT
DAY_MS = 86_400_000
YEAR_MS = 365 * DAY_MS
STALE_GRACE_DAYS = 7
STALE_AFTER_DECISION_DAYS = 30
STALE_IN_SETUP_DAYS = 90
# Path segments under /experiments that belong to other routes (warehouse sources), so no
# experiment could be reached under them.
RESERVED_IDS = frozenset(
    {"qualifying_events", "assignment_source", "assignment_sources", "entity_properties", "entity_property"}
)

RUNNING = frozenset({"active", "experiment_stopped", "assignment_stopped"})
DECIDED = frozenset({"decision_made", "abandoned"})
ALLOWED_FROM: dict[str, frozenset[str]] = {
    "start": frozenset({"setup"}),
    "schedule_start": frozenset({"setup"}),
    "make_decision": RUNNING,
    "abandon": RUNNING,
    "reset": RUNNING | DECIDED,
    "archive": frozenset({"setup"}) | DECIDED,
    "unarchive": frozenset({"archived"}),
    "restart_as_new": RUNNING | DECIDED | {"archived"},
    "disable_groups": frozenset({"setup"}) | RUNNING,
    "enable_groups": frozenset({"setup"}) | RUNNING,
    "delete": frozenset({"setup", "archived"}) | DECIDED,
}
# Where each action leads from a state ALLOWED_FROM allows. Besides states: back to the state it
# was archived from; a new experiment in setup (the original unchanged); deleted; no move.
ARCHIVED_FROM, NEW_EXPERIMENT, DELETED, UNCHANGED = "<archived from>", "<new>", "<deleted>", "<unchanged>"
LEADS_TO: dict[str, str] = {
    "start": "active",
    "schedule_start": "setup",  # it becomes active by itself at the scheduled time
    "make_decision": "decision_made",
    "abandon": "abandoned",
    "reset": "setup",
    "archive": "archived",
    "unarchive": ARCHIVED_FROM,
    "restart_as_new": NEW_EXPERIMENT,
    "disable_groups": UNCHANGED,
    "enable_groups": UNCHANGED,
    "delete": DELETED,
}
LOCKED_ONCE_STARTED = (
    "groups",
    "allocation",
    "userBuckets",
    "idType",
    "layerID",
    "controlGroupID",
    "experimentType",
)
# Present in every response, null when unset (the contract types them "... or null").
# Sorted once: a set's iteration order varies with the hash seed, and answers must not.
NULL_WHEN_UNSET = tuple(
    sorted(NULLABLE_FIELDS | {"startTime", "endTime", "decisionTime", "lastModifierEmail"})
)
# Optional fields without a default: left out of the stored document (and the response) when unset.
OMITTED_WHEN_NULL = frozenset({"controlGroupID", "stratifiedSampling"})
LIFECYCLE_FIELDS = ("startTime", "endTime", "decisionTime", "launchedGroupID", "decisionReason")
NOT_COPIED = frozenset(
    {
        "id",
        "name",
        "status",
        "scheduledStartTime",
        "version",
        "creatorID",
        "creatorName",
        "creatorEmail",
        "createdTime",
        "lastModifierID",
        "lastModifierName",
        "lastModifierEmail",
        "lastModifiedTime",
        *LIFECYCLE_FIELDS,
    }
)


def _default_review() -> Doc:
    return {"requiredReview": False, "allowedReviewers": []}


@functools.cache
def _rules() -> TypeAdapter[list[InlineTargetingRule]]:
    """The inline rules' validator, built where a write first needs it: the request models are
    not created at import (models/experiments_requests.py)."""
    from expconsole.models.experiments_requests import InlineTargetingRule

    return TypeAdapter(list[InlineTargetingRule])


def defaults() -> Doc:
    """A new experiment's fields before the body is applied (groups: Control/Test 50/50)."""
    return {
        "description": "",
        "idType": "userID",
        "secondaryIDType": None,
        "identityResolutionSource": None,
        "hypothesis": "",
        "links": [],
        "externalEvents": [],
        "groups": [
            _group({"name": "Control", "size": 50}, entities.new_id()),
            _group({"name": "Test", "size": 50}, entities.new_id()),
        ],
        "allocation": 100,
        "userBuckets": [],
        "layerID": None,
        "targetingGateID": None,
        "launchedGroupID": None,
        "duration": 14,
        "startTime": None,
        "endTime": None,
        "decisionTime": None,
        "decisionReason": None,
        "status": "setup",
        "experimentType": "BASE",
        "isSidecar": False,
        "isAnalysisOnly": None,
        "enabledNonProdEnvironments": [],
        "inlineTargetingRules": [],
        "primaryMetrics": [],
        "secondaryMetrics": [],
        "otherMetrics": [],
        "primaryMetricTags": [],
        "secondaryMetricTags": [],
        "sequentialTesting": False,
        "bonferroniCorrection": False,
        "bonferroniCorrectionPerMetric": False,
        "benjaminiHochbergPerVariant": False,
        "benjaminiHochbergPerMetric": False,
        "benjaminiPrimaryMetricsOnly": False,
        "defaultConfidenceInterval": "95",
        "defaultRollupWindow": -1,
        "bayesianPriors": [],
        "analyticsType": "frequentist",
        "sprtMDESettings": [],
        "cureCovariates": [],
        "preComputedUserDimensions": [],
        "assignmentSourceFilters": [],
        "allocationDuration": None,
        "cohortedMetricsMatureAfterEnd": False,
        "cohortWaitUntilEndToInclude": False,
        "scheduledReloadHour": None,
        "scheduledReloadDays": None,
        "turboMode": False,
        "manualQualityScores": [],
        "summarySections": [],
        "reviewSettings": _default_review(),
        "tags": [],
        "targetApps": [],
        "holdoutIDs": [],
        "team": None,
        "teamID": None,
    }


# --- derived fields ---------------------------------------------------------------------------------------


def effective(doc: Doc, now: int | None = None) -> Doc:
    """The experiment as it stands now: a scheduled start whose time has passed has happened."""
    now = entities.now_ms() if now is None else now
    scheduled = doc.get("scheduledStartTime")
    if doc.get("status") == "setup" and scheduled is not None and scheduled <= now:
        doc = {**doc, "status": "active", "startTime": scheduled, "endTime": None}
        doc.pop("scheduledStartTime")
    return doc


def is_stale(doc: Doc, now: int) -> bool:
    status = doc.get("status")
    if status in RUNNING:
        start = doc.get("startTime")
        planned = (doc.get("duration") or 0) + STALE_GRACE_DAYS
        return start is not None and now > start + planned * DAY_MS
    if status in DECIDED:
        decided = doc.get("decisionTime") or doc.get("endTime")
        return decided is not None and now > decided + STALE_AFTER_DECISION_DAYS * DAY_MS
    if status == "setup":
        return (
            doc.get("scheduledStartTime") is None and now > doc["createdTime"] + STALE_IN_SETUP_DAYS * DAY_MS
        )
    return False


def health(doc: Doc) -> Doc:
    stored = doc.get("_health")
    if stored:
        return {"healthCheckStatus": stored["status"], "healthChecks": stored["checks"]}
    return {
        "healthCheckStatus": "PASSED",
        "healthChecks": [
            {
                "name": "has_checks",
                "description": "No pulse data has been loaded yet: health checks run with the first "
                "pulse load after the experiment starts.",
                "status": "WAITING",
                "type": "has_checks",
                "metadata": {"type": "has_checks", "primary_id_type": doc.get("idType", "userID")},
            }
        ],
    }


def _group_out(group: Doc) -> Doc:
    out = {
        "name": group["name"],
        "id": group["id"],
        "size": group["size"],
        "parameterValues": group.get("parameterValues", {}),
        "description": group.get("description", ""),
        "disabled": bool(group.get("disabled", False)),
        "highlighted": bool(group.get("highlighted", False)),
    }
    if group.get("foreignGroupID") is not None:
        out["foreignGroupID"] = group["foreignGroupID"]
    return out


def present(doc: Doc, *, now: int | None = None, live: bool = True) -> Doc:
    """The experiment as the API returns it, as JSON values (how other kinds' listings show
    experiments: entities.Presenter). `live=False` shows a stored snapshot as it was."""
    now = entities.now_ms() if now is None else now
    if live:
        doc = effective(doc, now)
    out = entities.public(doc)
    for field in NULL_WHEN_UNSET:
        out.setdefault(field, None)
    rules = doc.get("inlineTargetingRules") or []
    out.update(
        groups=[_group_out(g) for g in doc.get("groups") or []],
        inlineTargetingRules=rules,
        inlineTargetingRulesJSON=json.dumps(rules, separators=(",", ":")),
        permalink=entities.permalink(KIND, doc["id"]),
        isStale=is_stale(doc, now),
        qualityScore=quality.quality_score(doc),
        **health(doc),
    )
    return out


def answer(doc: Doc, *, now: int | None = None, live: bool = True) -> Experiment:
    """The experiment as the API returns it (`present`), as the response model."""
    return Experiment.of(present(doc, now=now, live=live))


# --- normalising a body's fields ----------------------------------------------------------------------------


def _group(data: Doc, group_id: str) -> Doc:
    out = {
        "name": data["name"],
        "id": group_id,
        "size": data["size"],
        "parameterValues": data.get("parameterValues") or {},
        "description": data.get("description") or "",
        "disabled": bool(data.get("disabled", False)),
        "highlighted": bool(data.get("highlighted", False)),
    }
    if data.get("foreignGroupID") is not None:
        out["foreignGroupID"] = data["foreignGroupID"]
    return out


def _stored_groups(given: list[Doc], existing: list[Doc]) -> list[Doc]:
    """Groups as stored: a given id is kept; without one, a group keeps the id of the existing
    group of the same name (case-insensitive), else gets a new one."""
    by_name = {g["name"].strip().casefold(): g["id"] for g in existing}
    out = []
    for group in given:
        group_id = group.get("id") or by_name.get(group["name"].strip().casefold()) or entities.new_id()
        out.append(_group(group, group_id))
    return out


# The inline targeting rules' kind (services.common.rules). They have no rule endpoints: the
# experiment's `inlineTargetingRules` (or its JSON text) replaces them whole.
INLINE_RULES: rules_common.RuleKind[InlineTargetingRule, RulePatch, InlineRuleOut] = rules_common.RuleKind(
    owner="experiment", label="Experiment", stored=InlineRuleOut
)


def _stored_rules(given: Sequence[InlineTargetingRule], doc: Doc, field: str) -> list[Doc]:
    """A rule sent with an `id` keeps that rule's ids (it must be one of this experiment's);
    a rule without one gets new ids. As JSON values, as the other changes are."""
    existing = [InlineRuleOut.model_validate(r) for r in doc.get("inlineTargetingRules") or []]
    stored = rules_common.stored_rules(INLINE_RULES, given, existing, field)
    return [r.model_dump(mode="json", exclude_unset=True) for r in stored]


def _rules_from_json(text: str | None) -> list[InlineTargetingRule]:
    """`inlineTargetingRulesJSON`: JSON text of an array of rules; empty, `{}` or null: none."""
    field = "inlineTargetingRulesJSON"
    if text is None or not text.strip():
        return []
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise Invalid.field(field, f"is not valid JSON ({exc})") from None
    if parsed == {}:
        return []
    if not isinstance(parsed, list):
        raise Invalid.field(field, "must be the JSON text of an array of rules")
    try:
        return _rules().validate_python(parsed)
    except ValidationError as exc:
        from expconsole.models.experiments_requests import InlineTargetingRule  # built by _rules() already

        located = [{**e, "loc": (field, *e["loc"])} for e in exc.errors()]
        errors = field_errors(located, list[InlineTargetingRule])
        raise Invalid.fields(errors) from None


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _normalise(sent: Doc, doc: Doc, inline: Sequence[InlineTargetingRule] | None) -> Doc:
    """The body's fields as they would be stored, given the experiment they apply to (`inline`:
    the body's `inlineTargetingRules`, typed)."""
    changes = dict(sent)
    if "groups" in changes:
        changes["groups"] = _stored_groups(changes["groups"], doc.get("groups") or [])
    has_json = "inlineTargetingRulesJSON" in changes
    from_json = _rules_from_json(changes.pop("inlineTargetingRulesJSON", None)) if has_json else None
    if "inlineTargetingRules" in changes:
        assert inline is not None, "sent, so validated"
        if from_json is not None and _without_nulls(
            [r.model_dump(mode="json", exclude_unset=True) for r in from_json]
        ) != _without_nulls(changes["inlineTargetingRules"]):
            raise Invalid.field(
                "inlineTargetingRulesJSON",
                "disagrees with inlineTargetingRules: send one of them, or the same rules",
            )
        changes["inlineTargetingRules"] = _stored_rules(inline, doc, "inlineTargetingRules")
    elif from_json is not None:
        changes["inlineTargetingRules"] = _stored_rules(from_json, doc, "inlineTargetingRulesJSON")
    if "owner" in changes:
        changes["owner"] = entities.owner_for(changes["owner"])
    if "reviewSettings" in changes and changes["reviewSettings"] is None:
        changes["reviewSettings"] = _default_review()
    if "reviewSettings" in changes and changes["reviewSettings"].get("allowedReviewers") is None:
        changes["reviewSettings"] = {**changes["reviewSettings"], "allowedReviewers": []}
    return changes


def _apply(exp: StoredExperiment, changes: Doc) -> None:
    for key, value in changes.items():
        if value is None and key in OMITTED_WHEN_NULL:
            exp.unset(key)
        else:
            exp.set_fields({key: value})


# --- checks ------------------------------------------------------------------------------------------------


def _state_error(doc: Doc | StoredExperiment, action: str) -> Invalid:
    """A 400 naming the current state and the states the action needs."""
    exp_id, status = (doc["id"], doc["status"]) if isinstance(doc, dict) else (doc.id, doc.status)
    allowed = sorted(ALLOWED_FROM[action])
    words = (
        ", ".join(repr(s) for s in allowed[:-1]) + (" or " if len(allowed) > 1 else "") + repr(allowed[-1])
    )
    message = f"is {status!r}; {action} is allowed only when it is {words}"
    return Invalid(f"status: experiment {exp_id!r} {message}.", [{"field": "status", "message": message}])


def _require_state(doc: Doc | StoredExperiment, action: str) -> None:
    status = doc["status"] if isinstance(doc, dict) else doc.status
    if status not in ALLOWED_FROM[action]:
        raise _state_error(doc, action)


def _groups_core(groups: list[Doc]) -> list[tuple[Any, ...]]:
    return [
        (
            g["id"],
            g["name"],
            g["size"],
            json.dumps(g.get("parameterValues") or {}, sort_keys=True),
            g["disabled"],
        )
        for g in groups
    ]


def _check_editable(doc: Doc, changes: Doc) -> None:
    status = doc["status"]
    if status == "archived":
        raise Invalid.field("status", "is 'archived': unarchive the experiment before changing it")
    if "status" in changes and changes["status"] != status:
        raise Invalid.field(
            "status",
            f"is {status!r} and changes only through the lifecycle endpoints (start, make_decision, "
            f"abandon, reset, archive, unarchive), not to {changes['status']!r} in an update",
        )
    if status != "setup":
        for field in LOCKED_ONCE_STARTED:
            if field not in changes:
                continue
            before, after = doc.get(field), changes[field]
            if field == "groups":
                before, after = _groups_core(before or []), _groups_core(after)
            if before != after:
                hint = (
                    " (disable or enable groups with disable_groups / enable_groups)"
                    if field == "groups"
                    else ""
                )
                raise Invalid.field(
                    field,
                    f"cannot change once the experiment has started: it is {status!r}{hint}; reset it first",
                )
    if "launchedGroupID" in changes and changes["launchedGroupID"] != doc.get("launchedGroupID"):
        if status != "decision_made":
            raise Invalid.field(
                "launchedGroupID",
                f"is set by make_decision and can change only after a decision; the experiment is {status!r}",
            )
        if changes["launchedGroupID"] is None:
            raise Invalid.field("launchedGroupID", "must name a group once a decision is made")


def _check_design(doc: Doc) -> None:
    errors = design_errors(doc)
    if errors:
        raise Invalid.fields(errors)


def _metric_exists(name: str, metric_type: str) -> bool:
    """Stored metrics and built-ins (`<event>::event_count`, `<event>::event_dau`)."""
    # Imported here: only experiments that name metrics need the metric models.
    from expconsole.services import metrics

    return bool(metrics.exists(name, metric_type))


def _check_references(doc: Doc, fields: Iterable[str]) -> None:
    """The references among `fields` must name existing entities: else a 400 naming the field."""
    fields = set(fields)
    if "targetingGateID" in fields and doc.get("targetingGateID"):
        entities.require_exists(kinds.GATE, doc["targetingGateID"], "targetingGateID")
    if "layerID" in fields and doc.get("layerID"):
        entities.require_exists(kinds.LAYER, doc["layerID"], "layerID")
    if "assignmentSourceName" in fields and doc.get("assignmentSourceName"):
        # Sources are stored under their name; deleting one an experiment names is a 409 already.
        entities.require_exists(kinds.ASSIGNMENT_SOURCE, doc["assignmentSourceName"], "assignmentSourceName")
    if "holdoutIDs" in fields:
        for index, holdout_id in enumerate(doc.get("holdoutIDs") or []):
            entities.require_exists(kinds.HOLDOUT, holdout_id, f"holdoutIDs[{index}]")
    for field in METRIC_LISTS:
        if field not in fields:
            continue
        for index, metric in enumerate(doc.get(field) or []):
            if not _metric_exists(metric["name"], metric["type"]):
                raise Invalid.field(
                    f"{field}[{index}]", f"metric {metric['name']}::{metric['type']!s} does not exist"
                )
    if "inlineTargetingRules" in fields:
        for r_index, rule in enumerate(doc.get("inlineTargetingRules") or []):
            rules_common.check_condition_targets(rule, f"inlineTargetingRules[{r_index}]")


REFERENCE_FIELDS = (
    "targetingGateID",
    "layerID",
    "assignmentSourceName",
    "holdoutIDs",
    *METRIC_LISTS,
    "inlineTargetingRules",
)
PLACEMENT_FIELDS = ("layerID", "userBuckets", "allocation", "idType")


def _check_placement(doc: Doc, fields: Iterable[str]) -> None:
    """Hook 2: an experiment in a layer fits it, when a field that places it is set or changes."""
    if doc.get("layerID") and set(fields) & set(PLACEMENT_FIELDS):
        layer_buckets.check_placement(doc)


def _insert(exp_id: str, doc: Doc) -> Doc:
    """Hook 1: a new experiment with holdouts joins them in the same transaction."""
    if doc.get("holdoutIDs"):
        from expconsole.services import holdouts  # the other side of the link

        return holdouts.insert_experiment(doc)
    return entities.insert(KIND, exp_id, doc)


def _check_size(doc: Doc) -> None:
    size.check_stored_size(doc, "experiment", "Shorten large fields (parameter values, rules, summaries).")


def _new_id(name: str, given: str | None) -> str:
    exp_id = given or entities.id_from_name(name)
    if not 3 <= len(exp_id) <= 100:
        raise Invalid.field("id", "the id derived from the name must be 3 to 100 characters; send an id")
    if exp_id.lower() in RESERVED_IDS:
        raise Invalid.field(
            "id", f"{exp_id!r} is reserved: /experiments/{exp_id} is another route; send an id"
        )
    return exp_id


# --- create, read, list ------------------------------------------------------------------------------------


def create(body: ExperimentCreate) -> Experiment:
    sent = body.changes()
    exp_id = _new_id(body.name, sent.pop("id", None))
    if sent.get("status", "setup") != "setup":
        raise Invalid.field(
            "status", f"a new experiment is in 'setup', not {sent['status']!r}; start it with PUT .../start"
        )
    if sent.get("launchedGroupID") is not None:
        raise Invalid.field("launchedGroupID", "is set by make_decision; a new experiment is in 'setup'")
    creator = {k: sent.pop(k, None) for k in ("creatorID", "creatorEmail")}
    fields = {"id": exp_id, "name": body.name, **defaults()}
    changes = _normalise(sent, fields, body.inlineTargetingRules)
    from expconsole.models.experiments_stored import StoredExperiment  # only writes need it

    exp = StoredExperiment(
        **fields,
        owner=Owner.model_validate(entities.owner_for(sent.get("owner"))),
        **entities.bookkeeping(creator["creatorID"], creator["creatorEmail"]),
    )
    _apply(exp, changes)
    exp.status = "setup"
    doc = exp.doc()
    _check_design(doc)
    _check_references(doc, REFERENCE_FIELDS)
    _check_placement(doc, PLACEMENT_FIELDS)
    _check_size(doc)
    return answer(_insert(exp_id, doc))


def get(exp_id: str) -> Experiment:
    return answer(entities.load(KIND, exp_id))


def _day_start_ms(day: str) -> int:
    return int(dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC).timestamp() * 1000)


def _contains_text(exp: Doc, text: str) -> bool:
    """The list's text search: a case-insensitive substring of the fields a person recognises."""
    needle = text.casefold()
    fields = (exp["id"], exp["name"], exp.get("description") or "", exp.get("hypothesis") or "")
    return any(needle in field.casefold() for field in fields)


def _matches(exp: Doc, q: ExperimentListQuery, created_from: int | None, created_before: int | None) -> bool:
    checks = [
        exp["status"] in q.status if q.status else exp["status"] != "archived",
        q.layerID is None or exp.get("layerID") == q.layerID,
        q.idType is None or exp["idType"] in q.idType,
        q.teamID is None or exp.get("teamID") == q.teamID,
        q.targetAppID is None or q.targetAppID in exp["targetApps"],
        created_from is None or exp["createdTime"] >= created_from,
        created_before is None or exp["createdTime"] < created_before,
        q.creatorName is None or exp["creatorName"] == q.creatorName,
        q.creatorID is None or exp["creatorID"] == q.creatorID,
        q.tags is None or bool(set(q.tags) & set(exp["tags"])),
        not q.isStale or exp["isStale"],
        q.experimentType is None or exp["experimentType"] in q.experimentType,
        q.searchString is None or _contains_text(exp, q.searchString),
    ]
    return all(checks)


def list_experiments(q: ExperimentListQuery) -> Page[Experiment]:
    created_from = _day_start_ms(q.createdStartDate) if q.createdStartDate else None
    created_before = _day_start_ms(q.createdEndDate) + DAY_MS if q.createdEndDate else None
    if created_from is not None and created_before is not None and created_before <= created_from:
        raise Invalid.field("createdEndDate", "is before createdStartDate")
    now = entities.now_ms()
    matching = []
    for doc in dynamo.list_all(KIND):
        exp = present(doc, now=now)
        if _matches(exp, q, created_from, created_before):
            matching.append(exp)
    return page_of(matching, page=q.page, limit=q.limit).map(Experiment.of)


def versions(exp_id: str, page: int, limit: int) -> Page[Experiment]:
    snapshots = dynamo.versions(KIND, exp_id)
    if not snapshots:
        entities.load(KIND, exp_id)  # 404 when the experiment does not exist
    now = entities.now_ms()
    return page_of(snapshots, page=page, limit=limit).map(lambda s: answer(s, now=now, live=False))


# --- updates -----------------------------------------------------------------------------------------------


def _materialise(exp: StoredExperiment, now: int) -> None:
    """Store a scheduled start whose time has passed as the start it is (see `effective`)."""
    scheduled = exp.scheduledStartTime
    if exp.status == "setup" and scheduled is not None and scheduled <= now:
        exp.status = "active"
        exp.startTime = scheduled
        exp.endTime = None
        exp.unset("scheduledStartTime")


def _take_buckets(exp: StoredExperiment) -> None:
    """A started experiment in a layer holds its buckets (`_state.layerBuckets`, written by
    services.layer_buckets.take_buckets)."""
    doc = exp.doc()
    before = doc.get("_state")
    layer_buckets.take_buckets(doc)
    if doc.get("_state") != before:
        exp.state = type(exp.state).read(doc["_state"])


def _write(
    exp_id: str,
    change: Callable[[StoredExperiment, int], None],
    expected_version: int | None = None,
    *,
    linked: bool = False,
) -> Experiment:
    """`linked`: the change may touch `holdoutIDs`, so the holdouts change with it (hook 1)."""

    def apply(exp: StoredExperiment) -> None:
        now = entities.now_ms()
        _materialise(exp, now)
        change(exp, now)
        if exp.status == "active" and exp.layerID:
            _take_buckets(exp)
        _check_size(exp.doc())

    from expconsole.models.experiments_stored import StoredExperiment  # only writes need it

    if linked:
        from expconsole.services import holdouts  # the other side of the link

        change_doc = entities.through(StoredExperiment, apply)
        return answer(holdouts.update_experiment(exp_id, change_doc, expected_version))
    return answer(entities.update_stored(KIND, exp_id, StoredExperiment, apply, expected_version))


def _update(exp_id: str, body: ExperimentUpdate | ExperimentPatch) -> Experiment:
    sent = body.changes()
    sent.pop("version", None)

    def change(exp: StoredExperiment, now: int) -> None:
        before = exp.doc()
        changes = _normalise(sent, before, body.inlineTargetingRules)
        _check_editable(before, changes)
        changes.pop("status", None)
        _apply(exp, changes)
        doc = exp.doc()
        _check_design(doc)
        _check_references(doc, changes)
        _check_placement(doc, changes)

    return _write(exp_id, change, body.version, linked="holdoutIDs" in sent)


def full_update(exp_id: str, body: ExperimentUpdate) -> Experiment:
    return _update(exp_id, body)


def patch(exp_id: str, body: ExperimentPatch) -> Experiment:
    stored = partial.unchanged(KIND, exp_id, partial.changes_of(body.changes()), body.version)
    if stored is not None:
        return answer(stored)
    return _update(exp_id, body)


def delete(exp_id: str) -> None:
    doc = effective(entities.load(KIND, exp_id))
    if doc["status"] not in ALLOWED_FROM["delete"]:
        raise _state_error(doc, "delete")
    listed = [h["id"] for h in dynamo.list_all(kinds.HOLDOUT) if exp_id in (h.get("experimentIDs") or [])]
    holdouts = list(dict.fromkeys([*(doc.get("holdoutIDs") or []), *listed]))
    if holdouts:
        raise Conflict(
            f"Experiment {exp_id!r} is held out by holdout(s) {', '.join(map(repr, holdouts[:10]))}; "
            "remove it from them first."
        )
    entities.remove(KIND, exp_id, doc)


# --- lifecycle ---------------------------------------------------------------------------------------------


def _action(exp_id: str, action: str, effect: Callable[[StoredExperiment, int], None]) -> Experiment:
    def change(exp: StoredExperiment, now: int) -> None:
        _require_state(exp, action)
        effect(exp, now)

    return _write(exp_id, change)


def start(exp_id: str, body: ExperimentStartBody) -> Experiment:
    def effect(exp: StoredExperiment, now: int) -> None:
        exp.status = "active"
        exp.startTime = now
        exp.endTime = None
        exp.unset("scheduledStartTime")
        if body.analysisEndTime is not None:
            exp.analysisEndTime = body.analysisEndTime
        if body.analysisStartTime is not None:
            exp.state.analysisStartTime = body.analysisStartTime
            exp.state = exp.state

    return _action(exp_id, "start", effect)


def schedule_start(exp_id: str, scheduled_time: int | float) -> Experiment:
    if scheduled_time != int(scheduled_time):
        raise Invalid.field("scheduledTime", "must be whole milliseconds since the epoch")
    when = int(scheduled_time)

    def effect(exp: StoredExperiment, now: int) -> None:
        if when <= now:
            raise Invalid.field("scheduledTime", f"must be in the future (now is {now} ms since the epoch)")
        if when > now + YEAR_MS:
            raise Invalid.field(
                "scheduledTime", "must be at most a year ahead (milliseconds, not microseconds?)"
            )
        exp.scheduledStartTime = when

    return _action(exp_id, "schedule_start", effect)


def make_decision(exp_id: str, body: MakeDecisionBody) -> Experiment:
    def effect(exp: StoredExperiment, now: int) -> None:
        ids = [g.id for g in exp.groups]
        if body.id not in ids:
            raise Invalid.field(
                "id", f"names no group of experiment {exp_id!r}; its group ids: {', '.join(ids)}"
            )
        exp.status = "decision_made"
        exp.launchedGroupID = body.id
        exp.decisionReason = body.decisionReason
        exp.decisionTime = now
        exp.endTime = now
        if body.removeTargeting:
            exp.targetingGateID = None
            exp.inlineTargetingRules = []

    return _action(exp_id, "make_decision", effect)


def abandon(exp_id: str, body: AbandonBody) -> Experiment:
    def effect(exp: StoredExperiment, now: int) -> None:
        exp.status = "abandoned"
        exp.decisionReason = body.decisionReason
        exp.decisionTime = now
        exp.endTime = now
        exp.launchedGroupID = None

    return _action(exp_id, "abandon", effect)


def reset(exp_id: str) -> Experiment:
    def effect(exp: StoredExperiment, now: int) -> None:
        exp.status = "setup"
        exp.set_fields(dict.fromkeys(LIFECYCLE_FIELDS))
        exp.unset("scheduledStartTime")

    return _action(exp_id, "reset", effect)


def archive(exp_id: str, reason: str | None) -> Experiment:
    def effect(exp: StoredExperiment, now: int) -> None:
        state = exp.state
        state.archivedFrom = exp.status
        state.archiveReason = reason
        state.archivedTime = now
        exp.state = state
        exp.status = "archived"
        exp.unset("scheduledStartTime")

    return _action(exp_id, "archive", effect)


def unarchive(exp_id: str) -> Experiment:
    def effect(exp: StoredExperiment, now: int) -> None:
        state = exp.state
        exp.status = state.archivedFrom or "setup"
        for name in ("archivedFrom", "archiveReason", "archivedTime"):
            state.unset(name)
        exp.state = state
        _check_placement(exp.doc(), PLACEMENT_FIELDS)  # its buckets may have been taken meanwhile

    return _action(exp_id, "unarchive", effect)


def _control_id(exp: StoredExperiment) -> str:
    return exp.controlGroupID or exp.groups[0].id


def _set_groups_disabled(exp_id: str, names: list[str], disabled: bool) -> Experiment:
    action = "disable_groups" if disabled else "enable_groups"

    def effect(exp: StoredExperiment, now: int) -> None:
        groups = [g.model_copy() for g in exp.groups]
        index_of = {g.name.strip().casefold(): i for i, g in enumerate(groups)}
        control = _control_id(exp)
        for n_index, name in enumerate(names):
            found = index_of.get(name.strip().casefold())
            if found is None:
                known = ", ".join(repr(g.name) for g in groups)
                raise Invalid.field(
                    f"group_names[{n_index}]", f"no group named {name!r}; the groups are {known}"
                )
            if disabled and groups[found].id == control:
                raise Invalid.field(
                    f"group_names[{n_index}]", f"{name!r} is the control group: it cannot be disabled"
                )
            groups[found].disabled = disabled
        if disabled and not any(not g.disabled for g in groups if g.id != control):
            raise Invalid.field("group_names", "would leave no group besides the control enabled")
        exp.groups = groups

    return _action(exp_id, action, effect)


def disable_groups(exp_id: str, names: list[str]) -> Experiment:
    return _set_groups_disabled(exp_id, names, True)


def enable_groups(exp_id: str, names: list[str]) -> Experiment:
    return _set_groups_disabled(exp_id, names, False)


def restart_as_new(exp_id: str, name: str) -> Experiment:
    source = effective(entities.load(KIND, exp_id))
    _require_state(source, "restart_as_new")
    new_id = _new_id(name, None)
    copied = {k: copy.deepcopy(v) for k, v in source.items() if k not in NOT_COPIED and not k.startswith("_")}
    doc: Doc = {"id": new_id, "name": name, **copied}
    doc["groups"] = [{**g, "disabled": False} for g in doc["groups"]]
    doc.update(
        status="setup",
        **dict.fromkeys(LIFECYCLE_FIELDS),
        **entities.bookkeeping(),
    )
    from expconsole.models.experiments_stored import StoredExperiment  # only writes need it

    doc = StoredExperiment.read(doc).doc()
    _check_design(doc)
    _check_references(doc, REFERENCE_FIELDS)
    _check_placement(doc, PLACEMENT_FIELDS)
    _check_size(doc)
    return answer(_insert(new_id, doc))
