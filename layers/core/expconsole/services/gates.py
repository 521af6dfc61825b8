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

from collections.abc import Callable
from datetime import UTC, datetime

from expconsole import kinds
from expconsole.errors import Conflict, Invalid
from expconsole.models.common import Owner, ReviewSettings
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
from expconsole.models.rules import RuleOut, is_everyone_rule
from expconsole.services import entities
from expconsole.services.common import lifecycle, references
from expconsole.services.common import patch as partial
from expconsole.services.common import rules as rules_common
from expconsole.services.entities import Doc
from expconsole.store import dynamo, gate_checks

# --- derived fields ---------------------------------------------------------------------------


def rollout_rate(rules: list[Doc]) -> str | None:
    """The contract's rolloutRate: `0` all rules 0%, `100` all 100% with an everyone rule,
    `INBETWEEN` some rule strictly between; None when none of these holds."""
    percents = [r["passPercentage"] for r in rules]
    if all(p == 0 for p in percents):
        return "0"
    if all(p == 100 for p in percents) and any(is_everyone_rule(r) for r in rules):
        return "100"
    if any(0 < p < 100 for p in percents):
        return "INBETWEEN"
    return None


def expected_pass_rate(doc: Doc) -> str:
    """What the configuration makes the gate return: `0`, `100` or `INBETWEEN`.

    Rules are evaluated in order and the first match decides, so only the rules up to the
    first everyone rule can ever apply.
    """
    state = doc.get("_state", {})
    if lifecycle.is_archived(doc) or (not doc["isEnabled"] and not state.get("launched")):
        return "0"
    if state.get("launched"):
        return "100"
    reachable: list[Doc] = []
    for rule in doc["rules"]:
        reachable.append(rule)
        if is_everyone_rule(rule):
            break
    everyone_reached = bool(reachable) and is_everyone_rule(reachable[-1])
    if all(r["passPercentage"] == 0 for r in reachable):
        return "0"
    if everyone_reached and all(r["passPercentage"] == 100 for r in reachable):
        return "100"
    return "INBETWEEN"


def status_of(doc: Doc) -> str:
    state = doc.get("_state", {})
    if lifecycle.is_archived(doc):
        return "Archived"
    if state.get("launched"):
        return "Launched"
    return "In Progress" if doc["isEnabled"] else "Disabled"


STALE_CHECK_DAYS = 7


def _days_ago(hour: str, now_ms: int) -> float:
    then = datetime.strptime(hour, "%Y-%m-%dT%H").replace(tzinfo=UTC).timestamp() * 1000
    return (now_ms - then) / 86_400_000


def check_staleness(doc: Doc, usage: gate_checks.Usage, now_ms: int) -> str | None:
    """A stale reason from the SDKs' checks: none for 7 days after some (`STALE_PROBABLY_DEAD_CHECK`),
    or none ever for a gate older than 7 days (`STALE_EMPTY_CHECKS`)."""
    if usage.last_checked is not None:
        return (
            "STALE_PROBABLY_DEAD_CHECK" if _days_ago(usage.last_checked, now_ms) > STALE_CHECK_DAYS else None
        )
    if usage.checks:
        return None
    age_days = (now_ms - int(doc.get("createdTime") or now_ms)) / 86_400_000
    return "STALE_EMPTY_CHECKS" if age_days > STALE_CHECK_DAYS else None


def type_of(doc: Doc, usage: gate_checks.Usage | None = None, now_ms: int | None = None) -> tuple[str, str]:
    if doc.get("isTemplate"):
        return "TEMPLATE", "NONE"
    if doc.get("_type") == "PERMANENT":
        return "PERMANENT", "NONE"
    state = doc.get("_state", {})
    if state.get("launched"):
        return "STALE", "STALE_PROBABLY_LAUNCHED"
    if not doc["isEnabled"]:
        return "STALE", "STALE_PROBABLY_UNLAUNCHED"
    if not doc["rules"]:
        return "STALE", "STALE_NO_RULES"
    rate = expected_pass_rate(doc)
    if rate == "100":
        return "STALE", "STALE_ALL_TRUE"
    if rate == "0":
        return "STALE", "STALE_ALL_FALSE"
    if usage is not None:
        stale = check_staleness(doc, usage, entities.now_ms() if now_ms is None else now_ms)
        if stale:
            return "STALE", stale
    return "TEMPORARY", "NONE"


def pass_rate(doc: Doc, usage: gate_checks.Usage) -> str:
    """The list filter's pass rate: sampled from the SDKs' checks of the last 24 hours when there
    are any, else what the configuration implies."""
    if not usage.checks:
        return expected_pass_rate(doc)
    if usage.passes == 0:
        return "0"
    return "100" if usage.passes == usage.checks else "INBETWEEN"


def checks_per_hour(usage: gate_checks.Usage) -> int | float:
    per_hour = round(usage.checks / 24, 2)
    return int(per_hour) if per_hour.is_integer() else per_hour


def _answer(doc: Doc, usage: gate_checks.Usage) -> Doc:
    """The answer's JSON: the stored public fields, then the derived ones. Lists filter on it and
    build only their page's `Gate`s; the derivations read the stored document, as dynamic configs
    and the SDK checks do."""
    gate_type, reason = type_of(doc, usage)
    return {
        **entities.public(doc),
        "checksPerHour": checks_per_hour(usage),
        "status": status_of(doc),
        "type": gate_type,
        "typeReason": reason,
        "permalink": entities.permalink(kinds.GATE, doc["id"]),
    }


def present(doc: Doc, usage: gate_checks.Usage | None = None) -> Gate:
    """The gate as the API returns it (checks from the SDKs' gate exposures: one query, unless the
    caller read every gate's usage already)."""
    usage = gate_checks.usage_of(doc["id"]) if usage is None else usage
    return Gate.model_validate(_answer(doc, usage))


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
_NO_REVIEW: Doc = {"requiredReview": False, "allowedReviewers": []}


def create(body: GateCreate) -> Gate:
    gate_id = body.id or entities.id_from_name(body.name)
    if not 3 <= len(gate_id) <= 100:
        raise Invalid.field("id", "the id derived from the name must be 3 to 100 characters; send an id")
    data = body.model_dump(mode="json")
    gate = StoredGate(
        **{field: data[field] for field in _STORED_AS_SENT},
        id=gate_id,
        rules=[],
        checksPerHour=0,
        holdoutIDs=[],
        reviewSettings=ReviewSettings.model_validate(data["reviewSettings"] or _NO_REVIEW),
        owner=Owner.model_validate(entities.owner_for(data["owner"])),
        **entities.bookkeeping(body.creatorID, body.creatorEmail),
        declared_type=body.type,
        state=GateState(launched=False, archived=False),
    )
    _set_rules(gate, rules_common.stored_rules(RULES, body.rules, [], "rules"))
    if body.releasePipelineID:
        entities.require_exists(kinds.RELEASE_PIPELINE, body.releasePipelineID, "releasePipelineID")
    return present(entities.insert(kinds.GATE, gate_id, gate.doc()))


def get(gate_id: str) -> Gate:
    return present(entities.load(kinds.GATE, gate_id))


def _matches(gate: Doc, doc: Doc, q: GateListQuery, usage: gate_checks.Usage) -> bool:
    checks = [
        q.includeArchived or gate["status"] != "Archived",
        q.idType is None or gate["idType"] in q.idType,
        q.type is None or gate["type"] == q.type,
        q.typeReason is None or gate["typeReason"] == q.typeReason,
        q.passRate is None or pass_rate(doc, usage) in q.passRate,
        q.rolloutRate is None or rollout_rate(gate["rules"]) in q.rolloutRate,
        q.releasePipelineID is None or gate.get("releasePipelineID") == q.releasePipelineID,
        q.teamID is None or gate.get("teamID") == q.teamID,
        q.targetAppID is None or q.targetAppID in gate["targetApps"],
        q.store0100Exposures is None or gate["store0100Exposures"] == q.store0100Exposures,
        q.creatorName is None or gate["creatorName"] == q.creatorName,
        q.creatorID is None or gate["creatorID"] == q.creatorID,
        q.tags is None or bool(set(q.tags) & set(gate["tags"])),
    ]
    return all(checks)


def list_gates(q: GateListQuery) -> Page[Gate]:
    matching = []
    usage = gate_checks.every_gate()
    for doc in dynamo.list_all(kinds.GATE):
        gate_usage = usage.get(doc["id"], gate_checks.Usage())
        gate = _answer(doc, gate_usage)
        if _matches(gate, doc, q, gate_usage):
            matching.append(gate)
    return page_of(matching, page=q.page, limit=q.limit).map(Gate.model_validate)


def versions(gate_id: str, page: int, limit: int) -> Page[Gate]:
    snapshots = dynamo.versions(kinds.GATE, gate_id)
    if not snapshots:
        entities.load(kinds.GATE, gate_id)  # 404 when the gate does not exist
    usage = gate_checks.usage_of(gate_id)
    return page_of(snapshots, page=page, limit=limit).map(lambda s: present(s, usage))


# --- updates -----------------------------------------------------------------------------------


def _update(gate_id: str, change: Callable[[StoredGate], None], expected_version: int | None = None) -> Gate:
    """The next version of the gate, `change` applied to its stored model."""
    return present(entities.update_stored(kinds.GATE, gate_id, StoredGate, change, expected_version))


def _refuse_if_archived(gate: StoredGate) -> None:
    lifecycle.refuse_if_archived(gate.doc(), "Gate")


def _set_launched(gate: StoredGate, launched: bool) -> None:
    gate.state = gate.state.model_copy(update={"launched": launched})


def _apply_changes(gate: StoredGate, changes: GatePatch | GateUpdate) -> None:
    _refuse_if_archived(gate)
    sent = changes.changes()
    sent.pop("version", None)
    if "rules" in sent:
        assert changes.rules is not None
        _set_rules(gate, rules_common.stored_rules(RULES, changes.rules, gate.rules, "rules"))
        sent.pop("rules")
    if sent.get("releasePipelineID"):
        entities.require_exists(kinds.RELEASE_PIPELINE, sent["releasePipelineID"], "releasePipelineID")
    if "type" in sent:
        gate.declared_type = sent.pop("type")
    if "isEnabled" in sent and sent["isEnabled"] != gate.isEnabled:
        # Sending back the value read keeps a launch; changing it starts over from the rules.
        _set_launched(gate, False)
    if "owner" in sent:
        sent["owner"] = entities.owner_for(sent["owner"])
    if "reviewSettings" in sent and sent["reviewSettings"] is None:
        sent["reviewSettings"] = _NO_REVIEW
    gate.set_fields(sent)


def full_update(gate_id: str, body: GateUpdate) -> Gate:
    return _update(gate_id, lambda g: _apply_changes(g, body), body.version)


def patch(gate_id: str, body: GatePatch) -> Gate:
    stored = partial.unchanged(kinds.GATE, gate_id, partial.changes_of(body.changes()), body.version)
    if stored is not None:
        return present(stored)
    return _update(gate_id, lambda g: _apply_changes(g, body), body.version)


def _set_enabled(gate: StoredGate, enabled: bool, launched: bool) -> None:
    _refuse_if_archived(gate)
    gate.isEnabled = enabled
    _set_launched(gate, launched)


def enable(gate_id: str) -> Gate:
    return _update(gate_id, lambda g: _set_enabled(g, True, False))


def disable(gate_id: str) -> Gate:
    return _update(gate_id, lambda g: _set_enabled(g, False, False))


def launch(gate_id: str) -> Gate:
    """Launch: everyone passes from now on; the rules are kept but no longer evaluated."""
    return _update(gate_id, lambda g: _set_enabled(g, False, True))


def archive(gate_id: str, force: bool, reason: str | None) -> Gate:
    def in_use(doc: Doc) -> None:
        if not force:
            active = [r for r in users(gate_id) if not lifecycle.is_archived(r)]
            if active:
                raise Conflict(
                    f"Gate {gate_id!r} is still used by {_describe(active)}; remove those references "
                    "or archive with forceArchive: true."
                )

    return present(lifecycle.archive(kinds.GATE, gate_id, reason, label="Gate", check=in_use))


def unarchive(gate_id: str) -> Gate:
    return present(lifecycle.unarchive(kinds.GATE, gate_id, label="Gate", keep=("launched",)))


def delete(gate_id: str) -> None:
    doc = entities.load(kinds.GATE, gate_id)
    found = users(gate_id)
    if found:
        raise Conflict(f"Gate {gate_id!r} is used by {_describe(found)}; remove those references first.")
    entities.remove(kinds.GATE, gate_id, doc)


# --- rule endpoints ----------------------------------------------------------------------------


def get_rules(gate_id: str) -> list[RuleOut]:
    return StoredGate.read(entities.load(kinds.GATE, gate_id)).rules


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
    """The gate with `edit` applied to its rules (checked unless only removed)."""

    def change(gate: StoredGate) -> None:
        _refuse_if_archived(gate)
        rules = edit(gate.rules)
        if check:
            _set_rules(gate, rules)
        else:
            gate.rules = rules

    return _update(gate_id, change)


# --- references --------------------------------------------------------------------------------


def references_of_kind(kind: str, gate_id: str) -> list[Doc]:
    """Stored entities of `kind` that name the gate (services.common.references says where)."""
    entities.load(kinds.GATE, gate_id)
    return references.users_of_kind(kind, kinds.GATE, gate_id)


def users(gate_id: str) -> list[Doc]:
    """Every stored entity naming the gate, of each kind the references registry lists."""
    entities.load(kinds.GATE, gate_id)
    return references.users(kinds.GATE, gate_id)


_describe = references.describe


def gate_references(gate_id: str, page: int, limit: int) -> Page[Gate]:
    """Gates whose conditions name the gate."""
    docs = references_of_kind(kinds.GATE, gate_id)
    usage = gate_checks.every_gate()
    return page_of(docs, page=page, limit=limit).map(
        lambda d: present(d, usage.get(d["id"], gate_checks.Usage()))
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
