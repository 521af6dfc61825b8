"""Which fields of which kinds name which other entities: declared once, read by every check.

Each `Reference` says: entities of `kind` name entities of `target` in `field`, and how to find
those ids (with their place) in a stored item. From it come the "in use" checks (deleting or
archiving an entity another one names is a 409 naming the users), the "references" listings,
and the kinds a new kind's references are checked against: a kind added here with, say, gate
conditions blocks deleting the gate without another change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from expconsole import kinds
from expconsole.services.common.rules import GATE_CONDITIONS, SEGMENT_CONDITIONS
from expconsole.services.entities import Doc
from expconsole.store import dynamo

Places = Callable[[Mapping[str, Any]], Iterator[tuple[str, str]]]


@dataclass(frozen=True)
class Reference:
    kind: str
    field: str
    target: str
    places: Places  # (field path, id named there) in a stored item


def _scalar(field: str) -> Places:
    def places(doc: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        if doc.get(field):
            yield field, str(doc[field])

    return places


def _listed(field: str) -> Places:
    def places(doc: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        for index, value in enumerate(doc.get(field) or []):
            if value:
                yield f"{field}[{index}]", str(value)

    return places


def _rule_lists(doc: Mapping[str, Any], field: str) -> Iterator[tuple[str, list[Any]]]:
    if field == "phases":
        for p_index, phase in enumerate(doc.get("phases") or []):
            yield f"phases[{p_index}].rules", list(phase.get("rules") or [])
    else:
        yield field, list(doc.get(field) or [])


def _conditions(field: str, types: frozenset[str]) -> Places:
    """Conditions of the given types in the rules under `field` (`phases` for a pipeline's)."""

    def places(doc: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        for where, rules in _rule_lists(doc, field):
            for r_index, rule in enumerate(rules):
                for c_index, cond in enumerate(rule.get("conditions") or []):
                    if cond.get("type") in types and cond.get("targetValue"):
                        yield (
                            f"{where}[{r_index}].conditions[{c_index}].targetValue",
                            str(cond["targetValue"]),
                        )

    return places


def _metrics(field: str) -> Places:
    def places(doc: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        for index, entry in enumerate(doc.get(field) or []):
            if isinstance(entry, Mapping) and entry.get("name") and entry.get("type"):
                yield f"{field}[{index}]", f"{entry['name']}::{entry['type']}"  # models.metrics.metric_id

    return places


def _refs(kind: str, *declared: tuple[str, str, Places]) -> tuple[Reference, ...]:
    return tuple(Reference(kind, field, target, places) for field, target, places in declared)


RULE_TARGET = "rules[].conditions[].targetValue"
# In this order: the "in use" messages name users kind by kind in it.
REFERENCES: tuple[Reference, ...] = (
    *_refs(
        kinds.GATE,
        (RULE_TARGET, kinds.GATE, _conditions("rules", GATE_CONDITIONS)),
        (RULE_TARGET, kinds.SEGMENT, _conditions("rules", SEGMENT_CONDITIONS)),
        ("releasePipelineID", kinds.RELEASE_PIPELINE, _scalar("releasePipelineID")),
    ),
    *_refs(
        kinds.EXPERIMENT,
        ("targetingGateID", kinds.GATE, _scalar("targetingGateID")),
        (
            "inlineTargetingRules" + RULE_TARGET[5:],
            kinds.GATE,
            _conditions("inlineTargetingRules", GATE_CONDITIONS),
        ),
        (
            "inlineTargetingRules" + RULE_TARGET[5:],
            kinds.SEGMENT,
            _conditions("inlineTargetingRules", SEGMENT_CONDITIONS),
        ),
        ("layerID", kinds.LAYER, _scalar("layerID")),
        ("holdoutIDs[]", kinds.HOLDOUT, _listed("holdoutIDs")),
        ("primaryMetrics[]", kinds.METRIC, _metrics("primaryMetrics")),
        ("secondaryMetrics[]", kinds.METRIC, _metrics("secondaryMetrics")),
        ("otherMetrics[]", kinds.METRIC, _metrics("otherMetrics")),
    ),
    *_refs(
        kinds.DYNAMIC_CONFIG,
        (RULE_TARGET, kinds.GATE, _conditions("rules", GATE_CONDITIONS)),
        (RULE_TARGET, kinds.SEGMENT, _conditions("rules", SEGMENT_CONDITIONS)),
        ("releasePipelineID", kinds.RELEASE_PIPELINE, _scalar("releasePipelineID")),
    ),
    *_refs(
        kinds.HOLDOUT,
        ("targetingGateID", kinds.GATE, _scalar("targetingGateID")),
        ("gateIDs[]", kinds.GATE, _listed("gateIDs")),
        ("experimentIDs[]", kinds.EXPERIMENT, _listed("experimentIDs")),
        ("layerIDs[]", kinds.LAYER, _listed("layerIDs")),
    ),
    *_refs(
        kinds.RELEASE_PIPELINE,
        ("phases[].rules[].conditions[].targetValue", kinds.GATE, _conditions("phases", GATE_CONDITIONS)),
        (
            "phases[].rules[].conditions[].targetValue",
            kinds.SEGMENT,
            _conditions("phases", SEGMENT_CONDITIONS),
        ),
    ),
    *_refs(
        kinds.SEGMENT,
        (RULE_TARGET, kinds.SEGMENT, _conditions("rules", SEGMENT_CONDITIONS)),
    ),
)


def referring_kinds(target: str) -> list[str]:
    """The kinds that may name an entity of `target`, in the registry's order."""
    return list(dict.fromkeys(r.kind for r in REFERENCES if r.target == target))


def named(kind: str, doc: Mapping[str, Any], target: str) -> set[str]:
    """The ids of `target` entities a stored `kind` item names."""
    return {
        ref_id for r in REFERENCES if r.kind == kind and r.target == target for _, ref_id in r.places(doc)
    }


def names(kind: str, doc: Mapping[str, Any], target: str, target_id: str) -> bool:
    return target_id in named(kind, doc, target)


def users_of_kind(kind: str, target: str, target_id: str) -> list[Doc]:
    """Stored `kind` items (archived ones included) that name the entity; never the entity itself."""
    return [
        doc
        for doc in dynamo.list_all(kind)
        if not (kind == target and doc["id"] == target_id) and names(kind, doc, target, target_id)
    ]


def users(target: str, target_id: str, among: Iterable[str] | None = None) -> list[Doc]:
    """Every stored item naming the entity, each with its kind in `_kind`."""
    out: list[Doc] = []
    for kind in referring_kinds(target) if among is None else among:
        out.extend({**doc, "_kind": kind} for doc in users_of_kind(kind, target, target_id))
    return out


def describe(found: list[Doc]) -> str:
    """The users named in a message: `experiment 'e', gate 'g'`, at most ten and a count."""
    shown = [f"{kinds.LABEL[u['_kind']].lower()} {u['id']!r}" for u in found[:10]]
    more = f" and {len(found) - 10} more" if len(found) > 10 else ""
    return ", ".join(shown) + more
