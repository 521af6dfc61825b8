"""In-process tests of a gate's rule endpoints: read, add one, add several, update by id, update one,
delete one, and the conditions a rule accepts.

The handlers are called in process (tests/functional/lambdas.py) on one moto store per module, so
every test makes its own entities (unique ids) and narrows list assertions with a tag of its own.
What needs the gateway or real concurrency (keys, raw bodies, parallel writes) stays in
`tests/e2e/test_gates_rules.py`. Helpers and the `console` fixture come from the family's main
`*_api.py` module.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.test_gates_api import GATES, Console, assert_error, console, country, rule, uid

__all__ = ["console"]  # the fixture, re-exported so that pytest finds it in this module


def rules_path(gate_id: str) -> str:
    return f"{GATES}/{gate_id}/rules"


def read_rules(console: Console, gate_id: str) -> list[dict[str, Any]]:
    resp = console.get(rules_path(gate_id))
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["rules"]


def summary(rules: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(r["name"], r["passPercentage"]) for r in rules]


def test_get_rules_returns_the_stored_rules(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country(), name="first"), rule(10, name="second")])
    rules = read_rules(console, gate["id"])
    assert rules == gate["rules"]
    assert summary(rules) == [("first", 50), ("second", 10)]
    assert len({r["id"] for r in rules}) == 2


def test_add_one_invalid_rule_is_400_and_changes_nothing(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country())])
    resp = console.post(f"{GATES}/{gate['id']}/rule", json=rule(101, name="too much"))
    assert_error(resp, 400, "passPercentage")
    resp = console.post(f"{GATES}/{gate['id']}/rule", json={"name": "no percentage", "conditions": []})
    assert_error(resp, 400, "passPercentage")
    assert console.gate(gate["id"]) == gate


def test_add_several_rules_appends_them_in_order_in_one_write(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country(), name="a")])
    body = {"rules": [rule(10, country("FR"), name="b"), rule(90, name="c")]}
    resp = console.post(rules_path(gate["id"]), json=body)
    assert resp.status_code == 200, resp.text
    updated = resp.json()["data"]
    assert summary(updated["rules"]) == [("a", 50), ("b", 10), ("c", 90)]
    assert updated["version"] == gate["version"] + 1
    assert len({r["id"] for r in updated["rules"]}) == 3
    assert console.gate(gate["id"]) == updated


def test_add_several_rules_with_one_invalid_adds_none(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country())])
    bad = rule(10, {"type": "app_version", "operator": "version_gt", "targetValue": ["1.0"]})
    resp = console.post(rules_path(gate["id"]), json={"rules": [rule(10, name="fine"), bad]})
    assert_error(resp, 400, "rules[1].conditions[0].targetValue")
    assert console.gate(gate["id"]) == gate


def test_update_rules_by_id_changes_only_those_listed(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country(), name="a"), rule(10, name="b")])
    first, second = gate["rules"]
    resp = console.patch(rules_path(gate["id"]), json={"rules": [{"id": second["id"], "passPercentage": 75}]})
    assert resp.status_code == 200, resp.text
    updated = resp.json()["data"]
    assert updated["version"] == gate["version"] + 1
    assert updated["rules"][0] == first
    changed = updated["rules"][1]
    assert changed["passPercentage"] == 75
    assert (changed["id"], changed["baseID"], changed["name"]) == (second["id"], second["baseID"], "b")
    assert changed["conditions"] == second["conditions"]
    assert read_rules(console, gate["id"]) == updated["rules"]


def test_update_rules_with_an_unknown_id_is_400_and_changes_nothing(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country(), name="a"), rule(10, name="b")])
    first = gate["rules"][0]
    body = {"rules": [{"id": first["id"], "passPercentage": 5}, {"id": f"nope{uid()}", "passPercentage": 5}]}
    assert_error(console.patch(rules_path(gate["id"]), json=body), 400, "rules[1].id")
    assert console.gate(gate["id"]) == gate


def test_update_rules_with_a_bad_value_is_400_and_changes_nothing(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country())])
    body = {"rules": [{"id": gate["rules"][0]["id"], "passPercentage": 50.555}]}
    assert_error(console.patch(rules_path(gate["id"]), json=body), 400, "rules[0].passPercentage")
    assert console.gate(gate["id"]) == gate


def test_update_one_rule_changes_only_the_fields_sent(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country(), name="a"), rule(10, name="b")])
    first, second = gate["rules"]
    resp = console.patch(
        f"{rules_path(gate['id'])}/{first['id']}",
        json={"conditions": [country("JP")], "environments": ["production"]},
    )
    assert resp.status_code == 200, resp.text
    updated = resp.json()["data"]
    assert updated["version"] == gate["version"] + 1
    changed = updated["rules"][0]
    assert changed["conditions"] == [country("JP")]
    assert changed["environments"] == ["production"]
    assert (changed["id"], changed["name"], changed["passPercentage"]) == (first["id"], "a", 50)
    assert updated["rules"][1] == second
    assert console.gate(gate["id"]) == updated


def test_update_one_rule_with_a_bad_value_is_400_and_changes_nothing(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country())])
    path = f"{rules_path(gate['id'])}/{gate['rules'][0]['id']}"
    assert_error(console.patch(path, json={"passPercentage": 150}), 400, "passPercentage")
    assert_error(console.patch(path, json={"colour": "red"}), 400, "colour")
    bad_condition = {
        "conditions": [{"type": "custom_field", "field": "n", "operator": "gt", "targetValue": "x"}]
    }
    assert_error(console.patch(path, json=bad_condition), 400, "conditions[0].targetValue")
    assert console.gate(gate["id"]) == gate


def test_update_unknown_rule_is_404(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country())])
    resp = console.patch(f"{rules_path(gate['id'])}/nope{uid()}", json={"passPercentage": 5})
    assert_error(resp, 404)
    assert console.gate(gate["id"]) == gate


def test_delete_one_rule(console: Console) -> None:
    gate = console.create_gate(
        rules=[rule(50, country(), name="a"), rule(10, name="b"), rule(20, country("US"), name="c")]
    )
    first, second, third = gate["rules"]
    resp = console.delete(f"{rules_path(gate['id'])}/{second['id']}")
    assert resp.status_code == 200, resp.text
    updated = resp.json()["data"]
    assert updated["rules"] == [first, third]
    assert updated["version"] == gate["version"] + 1
    assert read_rules(console, gate["id"]) == [first, third]
    assert_error(console.delete(f"{rules_path(gate['id'])}/{second['id']}"), 404)
    assert console.gate(gate["id"])["version"] == updated["version"]


def test_deleting_the_last_rule_makes_the_gate_stale(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country())])
    resp = console.delete(f"{rules_path(gate['id'])}/{gate['rules'][0]['id']}")
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["rules"] == []
    assert (data["type"], data["typeReason"]) == ("STALE", "STALE_NO_RULES")


def test_full_update_keeps_the_ids_of_rules_sent_back(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country(), name="kept")])
    kept = gate["rules"][0]
    resp = console.post(
        f"{GATES}/{gate['id']}",
        json={
            "isEnabled": True,
            "description": "",
            "rules": [{**rule(60, country(), name="kept"), "id": kept["id"]}, rule(5, name="new")],
        },
    )
    assert resp.status_code == 200, resp.text
    kept_after, new = resp.json()["data"]["rules"]
    assert (kept_after["id"], kept_after["baseID"], kept_after["passPercentage"]) == (
        kept["id"],
        kept["baseID"],
        60,
    )
    assert new["id"] not in (kept["id"], kept["baseID"])


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("GET", "/rules", None),
        ("POST", "/rule", rule(10)),
        ("POST", "/rules", {"rules": [rule(10)]}),
        ("PATCH", "/rules", {"rules": [{"id": "x", "passPercentage": 1}]}),
        ("PATCH", "/rules/some_rule", {"passPercentage": 1}),
        ("DELETE", "/rules/some_rule", None),
    ],
)
def test_rule_endpoints_on_an_unknown_gate_are_404(
    console: Console, method: str, suffix: str, body: dict[str, Any] | None
) -> None:
    gate_id = f"missing_{uid()}"
    assert_error(console.call(method, f"{GATES}/{gate_id}{suffix}", json=body), 404)
    assert_error(console.get(f"{GATES}/{gate_id}"), 404)


VALID_CONDITIONS = [
    {"type": "user_id", "operator": "any", "targetValue": ["u1", "u2"]},
    {"type": "email", "operator": "str_contains_any", "targetValue": ["@example.com"]},
    {"type": "email", "operator": "str_matches", "targetValue": "^[a-z]+@example\\.com$"},
    {"type": "custom_field", "field": "age", "operator": "gt", "targetValue": 18},
    {"type": "custom_field", "field": "score", "operator": "gt", "targetValue": 2.5},
    {"type": "app_version", "operator": "version_gt", "targetValue": "1.2.3"},
    {"type": "browser_version", "operator": "version_lte", "targetValue": "120"},
    {"type": "browser_name", "operator": "none", "targetValue": ["IE"]},
    {"type": "os_name", "operator": "any", "targetValue": ["iOS", "Android"]},
    {"type": "os_version", "operator": "version_gt", "targetValue": "17.0"},
    {"type": "country", "operator": "none", "targetValue": ["FR"]},
    {"type": "environment_tier", "operator": "any", "targetValue": ["production"]},
    {"type": "ip_address", "operator": "any", "targetValue": ["10.0.0.1"]},
    {"type": "unit_id", "customID": "companyID", "operator": "any", "targetValue": ["acme"]},
]


@pytest.mark.parametrize("condition", VALID_CONDITIONS, ids=lambda c: f"{c['type']}-{c['operator']}")
def test_valid_conditions_are_stored_as_sent(console: Console, condition: dict[str, Any]) -> None:
    gate = console.create_gate(rules=[rule(40, condition)])
    assert gate["rules"][0]["conditions"] == [condition]
    assert console.gate(gate["id"])["rules"][0]["conditions"] == [condition]


def test_rule_environments_are_stored(console: Console) -> None:
    gate = console.create_gate(
        rules=[{**rule(40, country()), "environments": ["staging", "production"]}, rule(10)]
    )
    assert gate["rules"][0]["environments"] == ["staging", "production"]
    assert gate["rules"][1]["environments"] is None
