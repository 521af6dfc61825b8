"""The references registry (services.common.references): who names whom, and where."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from expconsole import kinds
from expconsole.services.common import references
from expconsole.store import dynamo


def cond(ctype: str, target: str) -> dict[str, object]:
    return {"type": ctype, "targetValue": target, "operator": "any"}


def rule(*conditions: dict[str, object]) -> dict[str, object]:
    return {"id": "r", "baseID": "r", "name": "r", "passPercentage": 100, "conditions": list(conditions)}


@pytest.fixture
def stored(aws: None) -> Iterator[None]:
    items = [
        (kinds.GATE, {"id": "g", "rules": []}),
        (kinds.GATE, {"id": "uses_g", "rules": [rule(cond("passes_gate", "g"))], "releasePipelineID": "p"}),
        (kinds.GATE, {"id": "other", "rules": [rule(cond("passes_gate", "elsewhere"))]}),
        (kinds.EXPERIMENT, {"id": "e1", "targetingGateID": "g"}),
        (
            kinds.EXPERIMENT,
            {"id": "e2", "inlineTargetingRules": [rule(cond("user_id", "u"), cond("fails_gate", "g"))]},
        ),
        (
            kinds.DYNAMIC_CONFIG,
            {"id": "dc", "rules": [rule(cond("passes_segment", "s"))], "releasePipelineID": "p"},
        ),
        (kinds.HOLDOUT, {"id": "h", "gateIDs": ["x", "g"], "layerIDs": ["l"]}),
        (kinds.RELEASE_PIPELINE, {"id": "p", "phases": [{"rules": [rule(cond("fails_gate", "g"))]}]}),
        (kinds.SEGMENT, {"id": "s", "rules": [rule(cond("passes_segment", "s2"))]}),
    ]
    for kind, doc in items:
        dynamo.create(kind, doc["id"], {**doc, "version": 1})
    yield


def test_the_kinds_that_may_name_a_gate_include_every_kind_with_gate_fields() -> None:
    assert references.referring_kinds(kinds.GATE) == [
        kinds.GATE,
        kinds.EXPERIMENT,
        kinds.DYNAMIC_CONFIG,
        kinds.HOLDOUT,
        kinds.RELEASE_PIPELINE,
    ]
    assert references.referring_kinds(kinds.RELEASE_PIPELINE) == [kinds.GATE, kinds.DYNAMIC_CONFIG]
    assert kinds.SEGMENT in references.referring_kinds(kinds.SEGMENT)


def test_places_name_the_field_path_of_each_reference() -> None:
    doc = {"phases": [{"rules": []}, {"rules": [rule(cond("user_id", "u"), cond("passes_segment", "s"))]}]}
    found = [
        (path, ref_id)
        for ref in references.REFERENCES
        if ref.kind == kinds.RELEASE_PIPELINE
        for path, ref_id in ref.places(doc)
    ]
    assert found == [("phases[1].rules[0].conditions[1].targetValue", "s")]
    metrics = {
        "primaryMetrics": [{"name": "m", "type": "sum"}],
        "otherMetrics": [{"name": "n", "type": "mean"}],
    }
    assert references.named(kinds.EXPERIMENT, metrics, kinds.METRIC) == {"m::sum", "n::mean"}


def test_users_are_every_stored_item_naming_the_entity_but_itself(stored: None) -> None:
    found = [(u["_kind"], u["id"]) for u in references.users(kinds.GATE, "g")]
    assert found == [
        (kinds.GATE, "uses_g"),
        (kinds.EXPERIMENT, "e1"),
        (kinds.EXPERIMENT, "e2"),
        (kinds.HOLDOUT, "h"),
        (kinds.RELEASE_PIPELINE, "p"),
    ]
    assert [u["id"] for u in references.users(kinds.RELEASE_PIPELINE, "p")] == ["uses_g", "dc"]
    assert [u["id"] for u in references.users(kinds.SEGMENT, "s")] == ["dc"]  # not itself
    assert references.users(kinds.GATE, "nobody") == []


def test_the_in_use_message_names_ten_users_and_counts_the_rest() -> None:
    found = [{"_kind": kinds.GATE, "id": f"g{i}"} for i in range(12)]
    message = references.describe(found)
    assert message.startswith("gate 'g0', gate 'g1'") and message.endswith("gate 'g9' and 2 more")
