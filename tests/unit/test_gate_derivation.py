"""Gate status, type and rates follow from the configuration, as services/gates.py documents."""

from __future__ import annotations

from typing import Any

import pytest

from expconsole.models.gates import StoredGate
from expconsole.services.gates import expected_pass_rate, rules_rollout_rate, status_of, type_of
from tests.unit.test_gates_models import STORED


def rule(percent: float, *conditions: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "r",
        "baseID": "r",
        "name": "r",
        "passPercentage": percent,
        "conditions": list(conditions),
        "environments": None,
    }


US = {"type": "country", "operator": "any", "targetValue": ["US"]}
EVERYONE = {"type": "public"}


def gate(rules: list[dict[str, Any]], enabled: bool = True, **state: Any) -> dict[str, Any]:
    return {
        **STORED,
        "isEnabled": enabled,
        "rules": rules,
        "_type": state.pop("type", "TEMPORARY"),
        "_state": state,
    }


def read(doc: dict[str, Any]) -> StoredGate:
    return StoredGate.read(doc)


def rollout_rate(rules: list[dict[str, Any]]) -> str | None:
    return rules_rollout_rate(read(gate(rules)).rules)


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (gate([]), ("STALE", "STALE_NO_RULES")),
        (gate([rule(100)]), ("STALE", "STALE_ALL_TRUE")),
        (gate([rule(100, EVERYONE)]), ("STALE", "STALE_ALL_TRUE")),
        (gate([rule(0, US), rule(0)]), ("STALE", "STALE_ALL_FALSE")),
        (gate([rule(50, US)]), ("TEMPORARY", "NONE")),
        (gate([rule(100, US)]), ("TEMPORARY", "NONE")),
        (gate([rule(0, US), rule(100)]), ("TEMPORARY", "NONE")),
        (gate([rule(100), rule(0, US)]), ("STALE", "STALE_ALL_TRUE")),
        (gate([], type="PERMANENT"), ("PERMANENT", "NONE")),
        (gate([rule(50, US)], enabled=False), ("STALE", "STALE_PROBABLY_UNLAUNCHED")),
        (gate([rule(50, US)], enabled=False, launched=True), ("STALE", "STALE_PROBABLY_LAUNCHED")),
        ({**gate([rule(50, US)]), "isTemplate": True}, ("TEMPLATE", "NONE")),
    ],
)
def test_type_and_reason(doc: dict[str, Any], expected: tuple[str, str]) -> None:
    assert type_of(read(doc)) == expected


def test_status_follows_enabled_launched_archived() -> None:
    assert status_of(read(gate([]))) == "In Progress"
    assert status_of(read(gate([], enabled=False))) == "Disabled"
    assert status_of(read(gate([], enabled=False, launched=True))) == "Launched"
    assert status_of(read(gate([], enabled=False, launched=True, archived=True))) == "Archived"


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ([], "0"),
        ([rule(0, US), rule(0)], "0"),
        ([rule(100, US), rule(100)], "100"),
        ([rule(100, US)], None),
        ([rule(100, US), rule(0)], None),
        ([rule(25, US), rule(100)], "INBETWEEN"),
    ],
)
def test_rollout_rate(rules: list[dict[str, Any]], expected: str | None) -> None:
    assert rollout_rate(rules) == expected


def test_expected_pass_rate_only_counts_rules_up_to_the_first_everyone_rule() -> None:
    assert expected_pass_rate(read(gate([rule(100), rule(0, US)]))) == "100"
    assert expected_pass_rate(read(gate([rule(0), rule(100, US)]))) == "0"
    assert expected_pass_rate(read(gate([rule(100, US), rule(100)]))) == "100"
    assert expected_pass_rate(read(gate([rule(100, US)]))) == "INBETWEEN"
    assert expected_pass_rate(read(gate([rule(100)], enabled=False))) == "0"
    assert expected_pass_rate(read(gate([], enabled=False, launched=True))) == "100"


def test_a_catch_all_rule_limited_to_some_environments_is_not_everyone() -> None:
    staging_only = {**rule(100), "environments": ["staging"]}
    assert type_of(read(gate([staging_only]))) == ("TEMPORARY", "NONE")
    assert expected_pass_rate(read(gate([staging_only]))) == "INBETWEEN"
    assert rollout_rate([staging_only]) is None
