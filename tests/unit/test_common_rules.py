"""Stored rules, rule ids and reference cycles, as every kind builds them (services.common.rules)."""

from __future__ import annotations

import pytest

from expconsole.api.errors import status_of
from expconsole.errors import Invalid
from expconsole.services.common import rules


def stored(rule_id: str, base_id: str | None = None) -> dict[str, object]:
    return {
        "id": rule_id,
        "baseID": base_id or rule_id,
        "name": rule_id,
        "passPercentage": 10,
        "conditions": [],
    }


def test_a_rule_doc_drops_null_condition_keys_and_keeps_only_set_optional_fields() -> None:
    data = {
        "name": "r",
        "passPercentage": 50,
        "conditions": [{"type": "user_id", "operator": "any", "targetValue": ["a"], "field": None}],
        "environments": None,
        "returnValue": {"x": 1},
        "pendingAutomatedRollouts": None,
    }
    doc = rules.rule_doc(data, "id1", "base1")
    assert doc == {
        "id": "id1",
        "baseID": "base1",
        "name": "r",
        "passPercentage": 50,
        "conditions": [{"type": "user_id", "operator": "any", "targetValue": ["a"]}],
        "environments": None,
        "returnValue": {"x": 1},
    }
    # A kind without return values leaves them out even when sent.
    assert "returnValue" not in rules.rule_doc(data, "id1", "base1", ("pendingAutomatedRollouts",))


def test_ids_sent_back_are_kept_by_id_or_base_id_and_new_rules_get_fresh_ones() -> None:
    existing = [stored("one"), stored("two", "origin")]
    assigned = list(rules.assign_ids(["one", None, "origin"], existing, "rules", "gate"))
    assert assigned[0] == ("one", "one", existing[0])
    assert assigned[2] == ("two", "origin", existing[1])
    new_id, new_base, continued = assigned[1]
    assert new_id == new_base and continued is None
    assert len(new_id) == 22 and new_id not in ("one", "two")


def test_an_unknown_rule_id_is_a_400_naming_its_place_and_the_owner() -> None:
    with pytest.raises(Invalid) as info:
        list(
            rules.assign_ids([None, "ghost"], [stored("one")], "phases[0].rules", "segment", "; leave it out")
        )
    assert status_of(info.value) == 400
    assert info.value.errors == [
        {"field": "phases[0].rules[1].id", "message": "no rule with id 'ghost' on this segment; leave it out"}
    ]


def test_the_same_rule_twice_is_refused() -> None:
    with pytest.raises(Invalid) as info:
        list(rules.assign_ids(["one", "one"], [stored("one")], "rules", "gate"))
    assert info.value.errors == [{"field": "rules[1].id", "message": "rule 'one' appears twice"}]


def test_ids_are_assigned_lazily_so_a_caller_reports_problems_in_list_order() -> None:
    ids = rules.assign_ids(["one", "ghost"], [stored("one")], "rules", "gate")
    assert next(ids)[0] == "one"  # the bad second id is not looked at yet
    with pytest.raises(Invalid):
        next(ids)


def test_a_cycle_is_found_with_its_path_and_none_without() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert rules.cycle_from("a", graph) == ["a", "b", "c", "a"]
    assert rules.cycle_from("d", graph) is None
    assert rules.cycle_from("x", {"x": {"x"}}) == ["x", "x"]
    # A cycle that does not pass through the start is not this entity's cycle.
    assert rules.cycle_from("s", {"s": {"a"}, "a": {"b"}, "b": {"a"}}) is None


def test_referenced_ids_reads_only_the_given_condition_types() -> None:
    rule_list = [
        {
            "conditions": [
                {"type": "passes_gate", "targetValue": "g1"},
                {"type": "user_id", "targetValue": ["u"]},
            ]
        },
        {"conditions": [{"type": "fails_segment", "targetValue": "s1"}]},
    ]
    assert rules.referenced_ids(rule_list, rules.GATE_CONDITIONS) == {"g1"}
    assert rules.referenced_ids(rule_list, rules.SEGMENT_CONDITIONS) == {"s1"}


def test_condition_targets_must_exist_and_the_400_names_the_condition(aws: None) -> None:
    from expconsole import kinds
    from expconsole.store import dynamo

    dynamo.create(kinds.GATE, "g", {"id": "g", "version": 1})
    rule = {
        "conditions": [
            {"type": "passes_gate", "targetValue": "g"},
            {"type": "user_id", "targetValue": ["nobody"]},
            {"type": "fails_segment", "targetValue": "missing"},
        ]
    }
    with pytest.raises(Invalid) as info:
        rules.check_condition_targets(rule, "phases[0].rules[3]")
    assert info.value.errors == [
        {
            "field": "phases[0].rules[3].conditions[2].targetValue",
            "message": "segment 'missing' does not exist",
        }
    ]
    rules.check_condition_targets({"conditions": rule["conditions"][:2]}, "")  # all exist: no error
    with pytest.raises(Invalid) as info:
        rules.check_condition_targets({"conditions": [{"type": "passes_gate", "targetValue": "x"}]}, "")
    assert info.value.errors[0]["field"] == "conditions[0].targetValue"
