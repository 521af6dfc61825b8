"""Feature gates: create, update, lifecycle, rules, versions and references.

`status`, `type` and `typeReason` are derived from the stored configuration on every read
(`present`), so they can never disagree with the rules they describe:

- status: `Archived` if archived, else `Launched` after a launch (a launched gate passes
  everyone and is not evaluated, hence `isEnabled: false`), else `In Progress` when enabled
  and `Disabled` when not.
- type: `TEMPLATE` for templates, `PERMANENT` when the owner said so (never stale), else
  `STALE` with a reason when the configuration makes the gate's answer fixed — launched
  (`STALE_PROBABLY_LAUNCHED`), disabled (`STALE_PROBABLY_UNLAUNCHED`), no rules
  (`STALE_NO_RULES`), everyone passes (`STALE_ALL_TRUE`) or nobody does (`STALE_ALL_FALSE`) —
  and `TEMPORARY` otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from expconsole import kinds
from expconsole.errors import Conflict, Invalid
from expconsole.models.common import ReviewSettings, ReviewSettingsIn
from expconsole.models.gates import (
    Gate,
    GateCreate,
    GateFields,
    GateListQuery,
    GatePatch,
    GateRule,
    GateRuleUpdate,
    GateState,
    GateUpdate,
    StoredGate,
)
from expconsole.models.pagination import Page, page_of
from expconsole.models.rules import RuleOut
from expconsole.services import entities
from expconsole.services.common import lifecycle, references
from expconsole.services.common import patch as partial
from expconsole.services.common import rules as rules_common
from expconsole.services.entities import Doc
from expconsole.store import dynamo, gate_checks

# --- derived fields ---------------------------------------------------------------------------


def is_everyone(rule: RuleOut) -> bool:
    """A catch-all rule: no conditions (or only `public` ones) in every environment
    (models.rules.is_everyone_rule, for a typed rule)."""
    return rule.environments is None and all(c.type == "public" for c in rule.conditions)


def rollout_rate(percents: Sequence[float], everyone: bool) -> str | None:
    """The contract's rolloutRate of rules with these pass percentages (`everyone`: one of them is
    an everyone rule): `0` all rules 0%, `100` all 100% with an everyone rule, `INBETWEEN` some
    rule strictly between; None when none of these holds."""
    if all(p == 0 for p in percents):
        return "0"
    if all(p == 100 for p in percents) and everyone:
        return "100"
    if any(0 < p < 100 for p in percents):
        return "INBETWEEN"
    return None


def rules_rollout_rate(rules: Sequence[RuleOut]) -> str | None:
    """`rollout_rate` of a gate's rules."""
    return rollout_rate([r.passPercentage for r in rules], any(is_everyone(r) for r in rules))


def expected_pass_rate(gate: StoredGate) -> str:
    """What the configuration makes the gate return: `0`, `100` or `INBETWEEN`.

    Rules are evaluated in order and the first match decides, so only the rules up to the
    first everyone rule can ever apply.
    """
    launched = gate.state.launched
    if lifecycle.entity_is_archived(gate) or (not gate.isEnabled and not launched):
        return "0"
    if launched:
        return "100"
    reachable: list[RuleOut] = []
    for rule in gate.rules:
        reachable.append(rule)
        if is_everyone(rule):
            break
    everyone_reached = bool(reachable) and is_everyone(reachable[-1])
    if all(r.passPercentage == 0 for r in reachable):
        return "0"
    if everyone_reached and all(r.passPercentage == 100 for r in reachable):
        return "100"
    return "INBETWEEN"


def status_of(gate: StoredGate) -> str:
    if lifecycle.entity_is_archived(gate):
        return "Archived"
    if gate.state.launched:
        return "Launched"
    return "In Progress" if gate.isEnabled else "Disabled"


STALE_CHECK_DAYS = 7


def _days_ago(hour: str, now_ms: int) -> float:
    then = datetime.strptime(hour, "%Y-%m-%dT%H").replace(tzinfo=UTC).timestamp() * 1000
    return (now_ms - then) / 86_400_000


def check_staleness(created_time: int | None, usage: gate_checks.Usage, now_ms: int) -> str | None:
    """A stale reason from the SDKs' checks: none for 7 days after some (`STALE_PROBABLY_DEAD_CHECK`),
    or none ever for a gate created more than 7 days ago (`STALE_EMPTY_CHECKS`)."""
    if usage.last_checked is not None:
        return (
            "STALE_PROBABLY_DEAD_CHECK" if _days_ago(usage.last_checked, now_ms) > STALE_CHECK_DAYS else None
        )
    if usage.checks:
        return None
    age_days = (now_ms - int(created_time or now_ms)) / 86_400_000
    return "STALE_EMPTY_CHECKS" if age_days > STALE_CHECK_DAYS else None


def type_of(
    gate: StoredGate, usage: gate_checks.Usage | None = None, now_ms: int | None = None
) -> tuple[str, str]:
    if gate.isTemplate:
        return "TEMPLATE", "NONE"
    if gate.declared_type == "PERMANENT":
        return "PERMANENT", "NONE"
    if gate.state.launched:
        return "STALE", "STALE_PROBABLY_LAUNCHED"
    if not gate.isEnabled:
        return "STALE", "STALE_PROBABLY_UNLAUNCHED"
    if not gate.rules:
        return "STALE", "STALE_NO_RULES"
    rate = expected_pass_rate(gate)
    if rate == "100":
        return "STALE", "STALE_ALL_TRUE"
    if rate == "0":
        return "STALE", "STALE_ALL_FALSE"
    if usage is not None:
        now = entities.now_ms() if now_ms is None else now_ms
        stale = check_staleness(gate.createdTime, usage, now)
        if stale:
            return "STALE", stale
    return "TEMPORARY", "NONE"


def pass_rate(gate: StoredGate, usage: gate_checks.Usage) -> str:
    """The list filter's pass rate: sampled from the SDKs' checks of the last 24 hours when there
    are any, else what the configuration implies."""
    if not usage.checks:
        return expected_pass_rate(gate)
    if usage.passes == 0:
        return "0"
    return "100" if usage.passes == usage.checks else "INBETWEEN"


def checks_per_hour(usage: gate_checks.Usage) -> int | float:
    per_hour = round(usage.checks / 24, 2)
    return int(per_hour) if per_hour.is_integer() else per_hour


@dataclass(frozen=True)
class _Derived:
    """What a gate's answer derives on every read (lists filter on it before building a page)."""

    gate: StoredGate
    usage: gate_checks.Usage
    status: str
    type: str
    typeReason: str


def _derive(gate: StoredGate, usage: gate_checks.Usage) -> _Derived:
    gate_type, reason = type_of(gate, usage)
    return _Derived(gate, usage, status_of(gate), gate_type, reason)


def _answer(derived: _Derived) -> Gate:
    """The answer: the stored public fields (those it does not declare too, as stored), then the
    derived ones."""
    gate = derived.gate
    return Gate.model_validate(
        {
            **entities.public(gate.doc()),
            "checksPerHour": checks_per_hour(derived.usage),
            "status": derived.status,
            "type": derived.type,
            "typeReason": derived.typeReason,
            "permalink": entities.permalink(kinds.GATE, gate.id),
        }
    )


def present(gate: StoredGate, usage: gate_checks.Usage | None = None) -> Gate:
    """The gate as the API returns it (checks from the SDKs' gate exposures: one query, unless the
    caller read every gate's usage already)."""
    usage = gate_checks.usage_of(gate.id) if usage is None else usage
    return _answer(_derive(gate, usage))


# --- rules --------------------------------------------------------------------------------------


RULES: rules_common.RuleKind[GateRule, GateRuleUpdate, RuleOut] = rules_common.RuleKind(
    owner="gate", label="Gate", stored=RuleOut, entity=kinds.GATE, cycle_field="rules"
)


def _set_rules(gate: StoredGate, rules: list[RuleOut]) -> None:
    """Rules checked (services.common.rules.check_conditions: every rule, by its place in the
    gate) and set."""
    rules_common.check_conditions(rules_common.placed(rules, "rules"), RULES, gate.id)
    gate.rules = rules


# --- create, read, list ---------------------------------------------------------------------------


# Create fields stored as sent; the others are stored as `create` derives them.
_STORED_AS_SENT = frozenset(GateCreate.model_fields.keys() & GateFields.model_fields.keys()) - {
    "id",
    "rules",
    "reviewSettings",
    "owner",
    "creatorID",
    "creatorEmail",
}


def _review_settings(sent: ReviewSettingsIn | None) -> ReviewSettings:
    """The stored review settings: as sent, or none required when left out or null."""
    if sent is None:
        return ReviewSettings(requiredReview=False, allowedReviewers=[])
    return ReviewSettings.model_validate(sent.model_dump(mode="json"))


def create(body: GateCreate) -> Gate:
    gate_id = body.id or entities.id_from_name(body.name)
    if not 3 <= len(gate_id) <= 100:
        raise Invalid.field("id", "the id derived from the name must be 3 to 100 characters; send an id")
    data = body.model_dump(mode="json", include=set(_STORED_AS_SENT))
    gate = StoredGate(
        **data,
        id=gate_id,
        rules=[],
        checksPerHour=0,
        holdoutIDs=[],
        reviewSettings=_review_settings(body.reviewSettings),
        owner=entities.owner(body.owner),
        **entities.bookkeeping(body.creatorID, body.creatorEmail),
        declared_type=body.type,
        state=GateState(launched=False, archived=False),
    )
    _set_rules(gate, rules_common.stored_rules(RULES, body.rules, [], "rules"))
    if body.releasePipelineID:
        entities.require_exists(kinds.RELEASE_PIPELINE, body.releasePipelineID, "releasePipelineID")
    return present(entities.insert(gate))


def get(gate_id: str) -> Gate:
    return present(entities.load(StoredGate, gate_id))


def _matches(gate: _Derived, q: GateListQuery) -> bool:
    stored = gate.gate
    checks = [
        q.includeArchived or gate.status != "Archived",
        q.idType is None or stored.idType in q.idType,
        q.type is None or gate.type == q.type,
        q.typeReason is None or gate.typeReason == q.typeReason,
        q.passRate is None or pass_rate(stored, gate.usage) in q.passRate,
        q.rolloutRate is None or rules_rollout_rate(stored.rules) in q.rolloutRate,
        q.releasePipelineID is None or stored.releasePipelineID == q.releasePipelineID,
        q.teamID is None or stored.teamID == q.teamID,
        q.targetAppID is None or q.targetAppID in stored.targetApps,
        q.store0100Exposures is None or stored.store0100Exposures == q.store0100Exposures,
        q.creatorName is None or stored.creatorName == q.creatorName,
        q.creatorID is None or stored.creatorID == q.creatorID,
        q.tags is None or bool(set(q.tags) & set(stored.tags)),
    ]
    return all(checks)


def list_gates(q: GateListQuery) -> Page[Gate]:
    usage = gate_checks.every_gate()
    matching = []
    for doc in dynamo.list_all(kinds.GATE):
        gate = StoredGate.read(doc)
        derived = _derive(gate, usage.get(gate.id, gate_checks.Usage()))
        if _matches(derived, q):
            matching.append(derived)
    return page_of(matching, page=q.page, limit=q.limit).map(_answer)


def versions(gate_id: str, page: int, limit: int) -> Page[Gate]:
    snapshots = dynamo.versions(kinds.GATE, gate_id)
    if not snapshots:
        entities.load(StoredGate, gate_id)  # 404 when the gate does not exist
    usage = gate_checks.usage_of(gate_id)
    return page_of(snapshots, page=page, limit=limit).map(lambda s: present(StoredGate.read(s), usage))


# --- updates -----------------------------------------------------------------------------------


def _refuse_if_archived(gate: StoredGate) -> None:
    lifecycle.refuse_if_archived(gate, "Gate")


def _set_launched(gate: StoredGate, launched: bool) -> None:
    gate.state = gate.state.model_copy(update={"launched": launched})


# Fields an update stores as sent (the others: `_apply_changes`).
_SET_AS_SENT = frozenset(
    {
        "name",
        "isEnabled",
        "description",
        "tags",
        "idType",
        "targetApps",
        "team",
        "teamID",
        "measureMetricLifts",
        "releasePipelineID",
        "store0100Exposures",
    }
)


def _apply_changes(gate: StoredGate, body: GatePatch | GateUpdate) -> None:
    """The fields the client sent, set on the stored gate (checked first, as they are set)."""
    _refuse_if_archived(gate)
    sent = body.model_fields_set
    if body.rules is not None:
        _set_rules(gate, rules_common.stored_rules(RULES, body.rules, gate.rules, "rules"))
    if body.releasePipelineID:
        entities.require_exists(kinds.RELEASE_PIPELINE, body.releasePipelineID, "releasePipelineID")
    if body.type is not None:
        gate.declared_type = body.type
    if body.isEnabled is not None and body.isEnabled != gate.isEnabled:
        # Sending back the value read keeps a launch; changing it starts over from the rules.
        _set_launched(gate, False)
    for name in sorted(sent & _SET_AS_SENT):
        setattr(gate, name, getattr(body, name))
    if body.monitoringMetrics is not None:
        gate.monitoringMetrics = [m.model_dump(mode="json") for m in body.monitoringMetrics]
    if body.owner is not None:
        gate.owner = entities.owner(body.owner)
    if "reviewSettings" in sent:
        gate.reviewSettings = _review_settings(body.reviewSettings)


def full_update(gate_id: str, body: GateUpdate) -> Gate:
    gate = entities.current(StoredGate, gate_id, body.version)
    _apply_changes(gate, body)
    return present(entities.replace(gate))


def patch(gate_id: str, body: GatePatch) -> Gate:
    gate = entities.current(StoredGate, gate_id, body.version)
    if not partial.asks_change(body):
        return present(gate)
    _apply_changes(gate, body)
    return present(entities.replace(gate))


def _set_enabled(gate_id: str, enabled: bool, launched: bool) -> Gate:
    gate = entities.load(StoredGate, gate_id)
    _refuse_if_archived(gate)
    gate.isEnabled = enabled
    _set_launched(gate, launched)
    return present(entities.replace(gate))


def enable(gate_id: str) -> Gate:
    return _set_enabled(gate_id, True, False)


def disable(gate_id: str) -> Gate:
    return _set_enabled(gate_id, False, False)


def launch(gate_id: str) -> Gate:
    """Launch: everyone passes from now on; the rules are kept but no longer evaluated."""
    return _set_enabled(gate_id, False, True)


def archive(gate_id: str, force: bool, reason: str | None) -> Gate:
    gate = entities.load(StoredGate, gate_id)
    lifecycle.refuse_archiving_twice(gate, "Gate")
    if not force:
        active = [r for r in users(gate_id) if not lifecycle.is_archived(r)]
        if active:
            raise Conflict(
                f"Gate {gate_id!r} is still used by {_describe(active)}; remove those references "
                "or archive with forceArchive: true."
            )
    gate.state = lifecycle.archived_state(gate.state, reason)
    return present(entities.replace(gate))


def unarchive(gate_id: str) -> Gate:
    gate = entities.load(StoredGate, gate_id)
    lifecycle.refuse_unless_archived(gate, "Gate")
    gate.state = lifecycle.unarchived_state(gate.state, keep=("launched",))
    return present(entities.replace(gate))


def delete(gate_id: str) -> None:
    gate = entities.load(StoredGate, gate_id)
    found = users(gate_id)
    if found:
        raise Conflict(f"Gate {gate_id!r} is used by {_describe(found)}; remove those references first.")
    entities.remove(gate)


# --- rule endpoints ----------------------------------------------------------------------------


def get_rules(gate_id: str) -> list[RuleOut]:
    return entities.load(StoredGate, gate_id).rules


def add_rules(gate_id: str, rules: list[GateRule]) -> Gate:
    """Append rules; each gets a new id (a rule's id is the service's to assign)."""
    rules_common.refuse_ids(rules)
    return _change_rules(gate_id, lambda existing: [*existing, *rules_common.added(RULES, rules)])


def update_rules(gate_id: str, updates: list[GateRuleUpdate]) -> Gate:
    """Change the listed rules, matched by id; rules not listed stay as they are."""
    return _change_rules(gate_id, lambda existing: rules_common.updated(RULES, existing, updates)[0])


def update_rule(gate_id: str, rule_id: str, update: GateRuleUpdate) -> Gate:
    return _change_rules(
        gate_id, lambda existing: rules_common.updated_one(RULES, existing, gate_id, rule_id, update)[0]
    )


def delete_rule(gate_id: str, rule_id: str) -> Gate:
    return _change_rules(
        gate_id, lambda existing: rules_common.without(RULES, existing, gate_id, rule_id), check=False
    )


def _change_rules(gate_id: str, edit: Callable[[list[RuleOut]], list[RuleOut]], check: bool = True) -> Gate:
    """The gate with `edit` applied to its rules (checked unless only removed), as its next version."""
    gate = entities.load(StoredGate, gate_id)
    _refuse_if_archived(gate)
    rules = edit(gate.rules)
    if check:
        _set_rules(gate, rules)
    else:
        gate.rules = rules
    return present(entities.replace(gate))


# --- references --------------------------------------------------------------------------------


def references_of_kind(kind: str, gate_id: str) -> list[Doc]:
    """Stored entities of `kind` that name the gate (services.common.references says where)."""
    entities.load(StoredGate, gate_id)
    return references.users_of_kind(kind, kinds.GATE, gate_id)


def users(gate_id: str) -> list[Doc]:
    """Every stored entity naming the gate, of each kind the references registry lists."""
    entities.load(StoredGate, gate_id)
    return references.users(kinds.GATE, gate_id)


_describe = references.describe


def gate_references(gate_id: str, page: int, limit: int) -> Page[Gate]:
    """Gates whose conditions name the gate."""
    docs = references_of_kind(kinds.GATE, gate_id)
    usage = gate_checks.every_gate()
    return page_of(docs, page=page, limit=limit).map(
        lambda d: present(StoredGate.read(d), usage.get(d["id"], gate_checks.Usage()))
    )


def list_references(kind: str, gate_id: str, page: int, limit: int) -> Page[Doc]:
    """Entities of another kind naming the gate, as that kind answers them."""
    docs = references_of_kind(kind, gate_id)
    if kind == kinds.EXPERIMENT:
        # Imported here: only this route needs the experiment models in the gates function.
        from expconsole.services import experiments

        shown = [experiments.present(d) for d in docs]
    else:
        shown = [entities.public(d) for d in docs]
    return page_of(shown, page=page, limit=limit)
