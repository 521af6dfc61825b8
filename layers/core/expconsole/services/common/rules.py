"""Rules, for every kind that has them: gates, dynamic configs, segments, experiments' inline
targeting and release pipelines' phases. How a rule is stored, how its ids are kept, what each
rule endpoint does, and which conditions are refused live here once; a kind's service says what
differs in a `RuleKind` and keeps only what is its own (a config's values, an entity's lifecycle).

- Stored shape: the kind's stored rule model (`RuleOut`, `DynamicConfigRuleOut`, ...): its ids,
  the fields it requires as sent (`environments` null when not sent), its optional fields only
  when set, conditions without the keys sent as null, and the kind's own keys (a config's
  values) from `RuleKind.values`.
- Ids: a rule sent with an `id` (or its `baseID`) keeps that rule's ids; one without gets new
  ones; an unknown id, or the same rule twice in one list, is a 400 naming it (`assign_ids`,
  which keeps a config's variants' and a pipeline's phases' ids the same way).
- The rule endpoints, the same for every kind that has the route (tests/functional/
  test_rules_semantics.py holds the table, kind by kind):
  - add (POST rule, POST rules): appended, each with new ids; a rule sent with `id` or
    `baseID` is a 400 (`refuse_ids`, `added`).
  - update by ids (PATCH rules): each listed rule, matched by its `id` (required; unknown: a
    400 naming it), merged with the fields sent; the others as they are (`updated`).
  - update one (PATCH rules/{ruleID}): the path's rule merged (unknown: 404); a body `id` that
    is not that rule's is a 400 naming both, never a change to either (`updated_one`).
  - delete (DELETE rules/{ruleID}): removed (unknown: 404) (`without`).
  - replace and reorder (a kind's full update or PATCH with `rules`, POST
    segments/{id}/conditional, an experiment's `inlineTargetingRules`, a pipeline's phases):
    the list sent, in its order, ids sent back kept (`stored_rules`).
- Conditions: `passes_gate`/`fails_gate` and `passes_segment`/`fails_segment` must name an
  existing gate or segment; a kind whose rules name its own kind (gates, segments) must not
  name the entity itself nor close a cycle through others (`check_conditions`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from expconsole import kinds
from expconsole.errors import Invalid, NotFound
from expconsole.models.rules import referenced_ids
from expconsole.services import entities
from expconsole.store import dynamo

if TYPE_CHECKING:
    from expconsole.models.release_pipelines import PipelineRule, PipelineRuleOut
    from expconsole.models.rules import RuleFields, RuleOutFields, RulePatch

Doc = dict[str, Any]

GATE_CONDITIONS = frozenset({"passes_gate", "fails_gate"})
SEGMENT_CONDITIONS = frozenset({"passes_segment", "fails_segment"})
OPTIONAL_FIELDS = ("returnValue", "completedAutomatedRollouts", "pendingAutomatedRollouts")
RULE_FIELDS = ("name", "passPercentage", "conditions", "environments")
_TARGET_KIND = {
    **dict.fromkeys(GATE_CONDITIONS, kinds.GATE),
    **dict.fromkeys(SEGMENT_CONDITIONS, kinds.SEGMENT),
}

# A rule as a request sends it, a partial update of one, and a rule as stored and answered.
SentT = TypeVar("SentT", bound="RuleFields | PipelineRule")
PatchT = TypeVar("PatchT", bound="RulePatch")
StoredT = TypeVar("StoredT", bound="RuleOutFields | PipelineRuleOut")
Item = TypeVar("Item")

__all__ = [
    "GATE_CONDITIONS",
    "OPTIONAL_FIELDS",
    "SEGMENT_CONDITIONS",
    "RuleKind",
    "added",
    "assign_ids",
    "check_condition_targets",
    "check_conditions",
    "cycle_from",
    "find_rule",
    "placed",
    "prefix",
    "referenced_ids",
    "refuse_ids",
    "rule_doc",
    "rule_in",
    "stored_conditions",
    "stored_rules",
    "updated",
    "updated_one",
    "without",
]


@dataclass(frozen=True)
class RuleKind(Generic[SentT, PatchT, StoredT]):
    """What a kind's rules do differently; every operation below takes one."""

    owner: str  # the entity in messages: "no rule with id 'x' on this gate"
    label: str  # and in a 404: "Gate 'g' has no rule 'x'."
    stored: type[StoredT]
    hint: str = ""  # ends the message of an unknown id in a list sent whole
    # The kind's own keys, derived by `values` from the rule sent and the stored rule it
    # continues (a config's returnValue, returnValueJson5 and variants), never taken as sent.
    own: tuple[str, ...] = ()
    values: Callable[[SentT | PatchT, StoredT | None, str], Doc] | None = None
    vet: Callable[[SentT, str], None] | None = None  # a check of each rule sent, before its id's
    entity: str | None = None  # the kind its conditions may name as its own: they must not cycle
    cycle_field: str | None = None  # where a cycle is reported; None: at the condition closing it

    @cached_property
    def shape(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The stored model's fields (besides ids and the kind's own): required, then optional."""
        fields = {k: f for k, f in self.stored.model_fields.items() if k not in ("id", "baseID", *self.own)}
        return tuple(k for k, f in fields.items() if f.is_required()), tuple(
            k for k, f in fields.items() if not f.is_required()
        )


# --- stored shape and ids ---------------------------------------------------------------------


def stored_conditions(conditions: Iterable[Mapping[str, Any]]) -> list[Doc]:
    """Conditions as stored: the keys sent as null left out."""
    return [{k: v for k, v in c.items() if v is not None} for c in conditions]


def rule_doc(
    data: Mapping[str, Any],
    rule_id: str,
    base_id: str | None,
    optional: Iterable[str] = OPTIONAL_FIELDS,
    required: Iterable[str] = RULE_FIELDS,
) -> Doc:
    """A rule as stored, from its fields as JSON: its ids (`base_id` None for a kind whose rules
    have none), the `required` fields as sent (null when left out), the `optional` ones only
    when set, and conditions without the keys sent as null."""
    out: Doc = {"id": rule_id} if base_id is None else {"id": rule_id, "baseID": base_id}
    for key in required:
        out[key] = stored_conditions(data[key]) if key == "conditions" else data.get(key)
    for key in optional:
        if data.get(key) is not None:
            out[key] = data[key]
    return out


def _ids_of(rule: object) -> tuple[str, str | None]:
    """A stored rule's id and base id, from its model or its stored JSON (a pipeline's rules, a
    config's variants and a pipeline's phases have no base id)."""
    values = rule if isinstance(rule, Mapping) else vars(rule)
    return values["id"], values.get("baseID")


def find_rule(rules: Sequence[object], rule_id: str) -> int | None:
    """The index of the rule with this id or base id."""
    for index, rule in enumerate(rules):
        if rule_id in _ids_of(rule):
            return index
    return None


def assign_ids(
    sent_ids: Iterable[str | None],
    existing: Sequence[Item],
    field: str,
    owner: str,
    hint: str = "",
    *,
    what: str = "rule",
    seen: set[str] | None = None,
) -> Iterator[tuple[str, str, Item | None]]:
    """For each item sent (by the id it was sent with, or None): its (id, baseID, the stored item
    it continues). `field` is where the list is in the body, `owner` names the entity in the
    message ("gate"), `hint` ends it, `what` names the items ("rule", "variant", "phase");
    `seen` is shared by lists whose items may move between them (a pipeline's phases). Lazy, so
    a caller checking each item as it goes reports the first problem in list order."""
    seen = set() if seen is None else seen
    for index, sent in enumerate(sent_ids):
        stored = None
        if sent is not None:
            found = find_rule(existing, sent)
            if found is None:
                raise Invalid.field(
                    f"{field}[{index}].id", f"no {what} with id {sent!r} on this {owner}{hint}"
                )
            stored = existing[found]
            rule_id, base_id = _ids_of(stored)
            base_id = base_id or rule_id
        else:
            rule_id = base_id = entities.new_id()
        if rule_id in seen:
            raise Invalid.field(f"{field}[{index}].id", f"{what} {rule_id!r} appears twice")
        seen.add(rule_id)
        yield rule_id, base_id, stored


def prefix(where: str) -> str:
    """What goes before a field of the thing at `where`: `rules[0].`, or nothing at the body's top."""
    return f"{where}." if where else ""


def placed(rules: Sequence[Item], field: str) -> list[tuple[str, Item]]:
    """Each rule of a list with its path (`rules[2]`), as `check_conditions` reports them."""
    return [(f"{field}[{index}]", rule) for index, rule in enumerate(rules)]


def _build(
    kind: RuleKind[SentT, PatchT, StoredT],
    data: Mapping[str, Any],
    ids: tuple[str, str],
    sent: SentT | PatchT,
    existing: StoredT | None,
    where: str,
) -> StoredT:
    """The stored rule from its fields as JSON (`data`), its ids, and the kind's own keys."""
    required, optional = kind.shape
    base_id = ids[1] if "baseID" in kind.stored.model_fields else None
    out = rule_doc(data, ids[0], base_id, optional, required)
    if kind.values is not None:
        out.update(kind.values(sent, existing, where))
    # `type[StoredT].model_validate` is typed as returning the bound (a union), not StoredT.
    return cast("StoredT", kind.stored.model_validate(out))


# --- the rule endpoints -----------------------------------------------------------------------


def stored_rules(
    kind: RuleKind[SentT, PatchT, StoredT],
    given: Sequence[SentT],
    existing: Sequence[StoredT],
    field: str,
    *,
    seen: set[str] | None = None,
) -> list[StoredT]:
    """A list sent whole (create, full update, replace, reorder), as stored in the order sent:
    a rule sent with an `id` keeps that rule's ids (and what the kind keeps of it), one without
    gets new ones. `field` is where the list is in the body (`` for a bare array)."""
    ids = assign_ids((r.id for r in given), existing, field, kind.owner, kind.hint, seen=seen)
    out = []
    for index, rule in enumerate(given):
        where = f"{field}[{index}]"
        if kind.vet is not None:
            kind.vet(rule, where)
        rule_id, base_id, stored = next(ids)
        out.append(_build(kind, rule.model_dump(mode="json"), (rule_id, base_id), rule, stored, where))
    return out


def _place(one: bool, index: int) -> str:
    """Where a rule added is in the body: the body itself (POST rule), or `rules[i]`."""
    return "" if one else f"rules[{index}]"


def refuse_ids(given: Sequence[RuleFields], one: bool = False) -> None:
    """Rules to add carry no ids: a rule's id is the service's to assign (checked before the
    entity is read). `one`: the body is the rule (POST rule)."""
    for index, rule in enumerate(given):
        if rule.id is not None or rule.baseID is not None:
            raise Invalid.field(
                f"{prefix(_place(one, index))}id", "new rules get their id from the service; leave it out"
            )


def added(kind: RuleKind[SentT, PatchT, StoredT], given: Sequence[SentT], one: bool = False) -> list[StoredT]:
    """Rules to append (POST rule, POST rules), as stored, each with new ids."""
    out = []
    for index, rule in enumerate(given):
        rule_id = entities.new_id()
        out.append(
            _build(kind, rule.model_dump(mode="json"), (rule_id, rule_id), rule, None, _place(one, index))
        )
    return out


def _merged(kind: RuleKind[SentT, PatchT, StoredT], rule: StoredT, update: PatchT, where: str) -> StoredT:
    """The stored rule with the fields sent changed; its ids stay."""
    sent = update.changes()
    sent.pop("id", None)
    sent.pop("baseID", None)
    rule_id, base_id = _ids_of(rule)
    data = {**rule.model_dump(mode="json", exclude_unset=True), **sent}
    return _build(kind, data, (rule_id, base_id or rule_id), update, rule, where)


def updated(
    kind: RuleKind[SentT, PatchT, StoredT], rules: Sequence[StoredT], updates: Sequence[PatchT]
) -> tuple[list[StoredT], list[tuple[str, StoredT]]]:
    """PATCH rules: the listed rules changed, matched by `id`; the others as they are. Returns the
    rules and each changed one with its place in the body (`rules[i]`)."""
    out = list(rules)
    changed = []
    for index, update in enumerate(updates):
        where = f"rules[{index}]"
        if update.id is None:
            raise Invalid.field(f"{where}.id", "is required: it names the rule to update")
        found = find_rule(out, update.id)
        if found is None:
            raise Invalid.field(f"{where}.id", f"no rule with id {update.id!r} on this {kind.owner}")
        out[found] = _merged(kind, out[found], update, where)
        changed.append((where, out[found]))
    return out, changed


def _index(
    kind: RuleKind[SentT, PatchT, StoredT], rules: Sequence[StoredT], owner_id: str, rule_id: str
) -> int:
    found = find_rule(rules, rule_id)
    if found is None:
        raise NotFound(f"{kind.label} {owner_id!r} has no rule {rule_id!r}.")
    return found


def rule_in(
    kind: RuleKind[SentT, PatchT, StoredT], rules: Sequence[StoredT], owner_id: str, rule_id: str
) -> StoredT:
    """The rule with this id or base id (GET rule/{ruleId}); else a 404."""
    return rules[_index(kind, rules, owner_id, rule_id)]


def updated_one(
    kind: RuleKind[SentT, PatchT, StoredT],
    rules: Sequence[StoredT],
    owner_id: str,
    rule_id: str,
    update: PatchT,
) -> tuple[list[StoredT], StoredT]:
    """PATCH rules/{ruleID}: the path's rule changed (404 if none). A body `id` must name that
    rule: one naming another is a 400 rather than a change to either."""
    found = _index(kind, rules, owner_id, rule_id)
    if update.id is not None and find_rule([rules[found]], update.id) is None:
        raise Invalid.field(
            "id", f"the body's id {update.id!r} differs from the rule in the path {rule_id!r}"
        )
    out = list(rules)
    out[found] = _merged(kind, rules[found], update, "")
    return out, out[found]


def without(
    kind: RuleKind[SentT, PatchT, StoredT], rules: Sequence[StoredT], owner_id: str, rule_id: str
) -> list[StoredT]:
    """DELETE rules/{ruleID}: the rules but that one (404 if none)."""
    found = _index(kind, rules, owner_id, rule_id)
    return [r for i, r in enumerate(rules) if i != found]


# --- conditions ---------------------------------------------------------------------------------


def _conditions(rule: object) -> Iterator[tuple[str, Any]]:
    """Each condition's (type, targetValue), from a rule's model or its stored JSON."""
    if isinstance(rule, Mapping):
        for cond in rule["conditions"]:
            yield cond["type"], cond.get("targetValue")
    else:
        for model in vars(rule)["conditions"]:
            yield model.type, model.targetValue


def check_conditions(
    placed: Iterable[tuple[str, object]], kind: RuleKind[Any, Any, Any] | None = None, owner_id: str = ""
) -> None:
    """Gate and segment conditions must name existing entities: else a 400 naming the condition
    (`placed`: each rule with its path in the body, `rules[2]`, or "" for a rule sent alone).
    Where `kind.entity` is the kind's own (gates naming gates, segments naming segments), they
    must not name the entity itself (`owner_id`) nor close a cycle through others."""
    first: dict[str, str] = {}  # the first condition naming each entity of the kind's own
    for where, rule in placed:
        for c_index, (ctype, target) in enumerate(_conditions(rule)):
            target_kind = _TARGET_KIND.get(ctype)
            if target_kind is None:
                continue
            here = f"{prefix(where)}conditions[{c_index}].targetValue"
            if kind is not None and target_kind == kind.entity:
                if target == owner_id:
                    raise Invalid.field(here, f"a {kind.owner} cannot depend on itself")
                first.setdefault(target, here)
            entities.require_exists(target_kind, target, here)
    if kind is None or kind.entity is None or not first:
        return
    types = frozenset(t for t, k in _TARGET_KIND.items() if k == kind.entity)
    graph = {d["id"]: referenced_ids(d.get("rules") or [], types) for d in dynamo.list_all(kind.entity)}
    graph[owner_id] = set(first)
    path = cycle_from(owner_id, graph)
    if path:
        field = kind.cycle_field or first[path[1]]
        raise Invalid.field(field, f"{kind.owner} conditions would form a cycle: " + " -> ".join(path))


def check_condition_targets(rule: object, where: str) -> None:
    """One rule's gate and segment conditions must name existing entities (`where`: its path)."""
    check_conditions([(where, rule)])


def cycle_from(start: str, graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """A path from `start` back to itself through `graph` (id -> ids it references), if any:
    `[start, ..., start]`, visiting references in sorted order so the answer is stable."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    visited: set[str] = set()
    while stack:
        node, path = stack.pop()
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                return [*path, start]
            if nxt not in visited:
                visited.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None
