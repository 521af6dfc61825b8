"""Validation errors name the field with its full path and the rule it broke."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from expconsole.models.gates import GateCreate, GatePatch
from expconsole.models.rules import Condition
from expconsole.models.validation import field_errors, field_path


def errors_of(model: type, data: dict) -> dict[str, str]:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    loc_errors = [{**e, "loc": ("body", *e["loc"])} for e in caught.value.errors()]
    return {e["field"]: e["message"] for e in field_errors(loc_errors)}


def test_paths_render_like_json_paths() -> None:
    assert field_path(("body", "rules", 0, "conditions", 2, "operator")) == "rules[0].conditions[2].operator"
    assert field_path(("query", "query", "limit")) == "limit"
    assert field_path(("path", "id")) == "id"


def test_nested_condition_errors_point_at_the_condition_field() -> None:
    errors = errors_of(
        GateCreate,
        {
            "name": "gate",
            "rules": [
                {
                    "name": "r",
                    "passPercentage": 10,
                    "conditions": [{"type": "app_version", "operator": "version_gt", "targetValue": ["1"]}],
                }
            ],
        },
    )
    assert "rules[0].conditions[0].targetValue" in errors
    assert "version" in errors["rules[0].conditions[0].targetValue"]


def test_strings_are_not_coerced_to_numbers_or_booleans() -> None:
    errors = errors_of(
        GateCreate,
        {
            "name": "gate",
            "isEnabled": "true",
            "rules": [{"name": "r", "passPercentage": "5", "conditions": []}],
        },
    )
    assert set(errors) == {"isEnabled", "rules[0].passPercentage"}


def test_unknown_fields_are_refused_by_name() -> None:
    assert errors_of(GateCreate, {"name": "gate", "enabled": True}) == {
        "enabled": "is not a field of this request"
    }


def test_patch_refuses_null_for_non_nullable_fields_but_allows_it_where_null_means_unset() -> None:
    assert "name" in errors_of(GatePatch, {"name": None})
    assert GatePatch.model_validate({"team": None}).changes() == {"team": None}


@pytest.mark.parametrize(
    ("condition", "field"),
    [
        ({"type": "country", "operator": "any", "targetValue": []}, "targetValue"),
        ({"type": "country", "operator": "any", "targetValue": "US"}, "targetValue"),
        ({"type": "custom_field", "operator": "gt", "targetValue": "5", "field": "age"}, "targetValue"),
        ({"type": "custom_field", "operator": "gt", "targetValue": 5}, "field"),
        ({"type": "unit_id", "operator": "any", "targetValue": ["a"]}, "customID"),
        ({"type": "user_id", "operator": "str_matches", "targetValue": "(unclosed"}, "targetValue"),
        ({"type": "time", "operator": "after", "targetValue": "2024-01-01"}, "targetValue"),
        ({"type": "country", "operator": "version_gt", "targetValue": "1.0"}, "operator"),
        ({"type": "country", "operator": "bogus", "targetValue": ["x"]}, "operator"),
        ({"type": "country", "targetValue": ["x"]}, "operator"),
        ({"type": "passes_gate", "operator": "any", "targetValue": "g"}, "operator"),
        ({"type": "passes_segment", "targetValue": ["seg"]}, "targetValue"),
        ({"type": "planet", "operator": "any", "targetValue": ["x"]}, "type"),
    ],
)
def test_operator_fixes_target_value_type(condition: dict, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Condition.model_validate(condition)
    assert [e["loc"] for e in caught.value.errors()] == [(field,)]


@pytest.mark.parametrize(
    "condition",
    [
        {"type": "public"},
        {"type": "country", "operator": "any", "targetValue": ["US", "CA"]},
        {"type": "custom_field", "field": "age", "operator": "gte", "targetValue": 18},
        {"type": "app_version", "operator": "version_gte", "targetValue": "2.10.1"},
        {"type": "email", "operator": "str_ends_with_any", "targetValue": ["@example.com"]},
        {"type": "user_id", "operator": "str_matches", "targetValue": "^a.*z$"},
        {"type": "time", "operator": "after", "targetValue": 1700000000000},
        {"type": "unit_id", "customID": "companyID", "operator": "none", "targetValue": ["c1"]},
        {"type": "passes_gate", "targetValue": "other_gate"},
        {"type": "fails_segment", "targetValue": "beta_users"},
        {"type": "environment_tier", "operator": "eq", "targetValue": "production"},
    ],
)
def test_valid_conditions_are_accepted_unchanged(condition: dict) -> None:
    parsed = Condition.model_validate(condition).model_dump(exclude_none=True)
    assert parsed == condition


def test_pass_percentage_bounds_and_precision() -> None:
    rule = {"name": "r", "conditions": []}
    for ok in (0, 100, 12.5, 33.33):
        GateCreate.model_validate({"name": "gate", "rules": [{**rule, "passPercentage": ok}]})
    for bad in (-1, 100.01, 50.123, True):
        assert "rules[0].passPercentage" in errors_of(
            GateCreate, {"name": "gate", "rules": [{**rule, "passPercentage": bad}]}
        )


def test_pattern_errors_are_said_in_words() -> None:
    errors = errors_of(GateCreate, {"name": "bad/name", "id": "bad id"})
    assert errors["name"].startswith("may contain only letters, digits, underscore, hyphen, period and space")
    assert errors["id"].startswith("may contain only letters, digits, underscore, hyphen and period")
