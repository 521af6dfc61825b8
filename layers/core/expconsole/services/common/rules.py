"""Targeting rules as every kind stores them, and the cycle check of references between entities.

A stored rule is `{id, baseID, name, passPercentage, conditions, environments}` plus the optional
fields a kind allows. A rule sent back with an `id` (or its `baseID`) keeps that rule's ids; one
without gets new ones; the same rule twice in one list is refused. Conditions are stored
without the keys sent as null.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from expconsole import kinds
from expconsole.errors import Invalid
from expconsole.models.rules import referenced_ids
from expconsole.services import entities

Doc = dict[str, Any]

GATE_CONDITIONS = frozenset({"passes_gate", "fails_gate"})
SEGMENT_CONDITIONS = frozenset({"passes_segment", "fails_segment"})
OPTIONAL_FIELDS = ("returnValue", "completedAutomatedRollouts", "pendingAutomatedRollouts")

__all__ = [
    "GATE_CONDITIONS",
    "OPTIONAL_FIELDS",
    "SEGMENT_CONDITIONS",
    "assign_ids",
    "check_condition_targets",
    "cycle_from",
    "find_rule",
    "referenced_ids",
    "rule_doc",
    "stored_conditions",
]


def stored_conditions(conditions: Iterable[Mapping[str, Any]]) -> list[Doc]:
    """Conditions as stored: the keys sent as null left out."""
    return [{k: v for k, v in c.items() if v is not None} for c in conditions]


def rule_doc(
    data: Mapping[str, Any], rule_id: str, base_id: str, optional: Sequence[str] = OPTIONAL_FIELDS
) -> Doc:
    """A rule as stored, from its fields as JSON (`optional` ones only when set)."""
    out: Doc = {
        "id": rule_id,
        "baseID": base_id,
        "name": data["name"],
        "passPercentage": data["passPercentage"],
        "conditions": stored_conditions(data["conditions"]),
        "environments": data.get("environments"),
    }
    for key in optional:
        if data.get(key) is not None:
            out[key] = data[key]
    return out


def find_rule(rules: Sequence[Mapping[str, Any]], rule_id: str) -> int | None:
    """The index of the rule with this id or base id."""
    for index, rule in enumerate(rules):
        if rule_id in (rule["id"], rule.get("baseID")):
            return index
    return None


def assign_ids(
    sent_ids: Iterable[str | None], existing: Sequence[Doc], field: str, owner: str, hint: str = ""
) -> Iterator[tuple[str, str, Doc | None]]:
    """For each rule sent (by the id it was sent with, or None): its (id, baseID, the stored rule
    it continues). `field` is where the list is in the body, `owner` names the entity in the
    message ("gate"), `hint` ends it. Lazy, so a caller checking each rule as it goes reports
    the first problem in list order."""
    seen: set[str] = set()
    for index, sent in enumerate(sent_ids):
        stored = None
        if sent is not None:
            found = find_rule(existing, sent)
            if found is None:
                raise Invalid.field(f"{field}[{index}].id", f"no rule with id {sent!r} on this {owner}{hint}")
            stored = existing[found]
            rule_id, base_id = stored["id"], stored["baseID"]
        else:
            rule_id = base_id = entities.new_id()
        if rule_id in seen:
            raise Invalid.field(f"{field}[{index}].id", f"rule {rule_id!r} appears twice")
        seen.add(rule_id)
        yield rule_id, base_id, stored


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


def check_condition_targets(rule: Mapping[str, Any], where: str) -> None:
    """Gate and segment conditions must name existing entities: else a 400 naming the condition
    (`where` is the rule's path: `rules[2]`, or "" for a rule sent alone)."""
    prefix = f"{where}." if where else ""
    for c_index, cond in enumerate(rule["conditions"]):
        field = f"{prefix}conditions[{c_index}].targetValue"
        if cond["type"] in GATE_CONDITIONS:
            entities.require_exists(kinds.GATE, cond["targetValue"], field)
        elif cond["type"] in SEGMENT_CONDITIONS:
            entities.require_exists(kinds.SEGMENT, cond["targetValue"], field)
