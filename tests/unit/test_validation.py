"""Validation errors name the field with its full path and the rule it broke."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from expconsole.models.dynamic_configs import DynamicConfigCreate
from expconsole.models.experiments_requests import ExperimentCreate, InlineTargetingRule
from expconsole.models.gates import GateCreate, GatePatch
from expconsole.models.holdouts import HoldoutCreate
from expconsole.models.layers import LayerCreate
from expconsole.models.metrics import MetricCreate
from expconsole.models.prompts import PromptCreate
from expconsole.models.release_pipelines import PipelineCreate
from expconsole.models.rules import Condition
from expconsole.models.segments import SegmentCreate
from expconsole.models.validation import closest_name, field_errors, field_path
from expconsole.models.warehouse_sources import AssignmentSourceCreate, QualifyingEventCreate


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


# --- an unknown field names the closest known one ----------------------------------------------

NOT_A_FIELD = "is not a field of this request"
RULE = {"name": "r", "passPercentage": 10, "conditions": []}


def suggested(model: Any, data: Any, field: str) -> str:
    """The message for `field` when `data` is validated as `model` (given to field_errors)."""
    with pytest.raises(ValidationError) as caught:
        TypeAdapter(model).validate_python(data)
    loc_errors = [{**e, "loc": ("body", *e["loc"])} for e in caught.value.errors()]
    messages = {e["field"]: e["message"] for e in field_errors(loc_errors, model)}
    assert field in messages, messages
    return messages[field]


@pytest.mark.parametrize(
    ("model", "data", "field", "meant"),
    [
        (GatePatch, {"enabled": True}, "enabled", "isEnabled"),
        (GateCreate, {"name": "gate one", "enabled": False}, "enabled", "isEnabled"),
        (GateCreate, {"name": "gate one", "is_enabled": False}, "is_enabled", "isEnabled"),
        (GateCreate, {"name": "gate one", "Description": "x"}, "Description", "description"),
        (GateCreate, {"name": "gate one", "desc": "x"}, "desc", "description"),
        (GateCreate, {"name": "gate one", "rule": [RULE]}, "rule", "rules"),
        (
            GateCreate,
            {"name": "gate one", "rules": [{**RULE, "condtions": []}]},
            "rules[0].condtions",
            "conditions",
        ),
        (
            GateCreate,
            {"name": "gate one", "rules": [{**RULE, "pass_percentage": 5}]},
            "rules[0].pass_percentage",
            "passPercentage",
        ),
        (GateCreate, {"name": "gate one", "owner": {"ownerId": "u1"}}, "owner.ownerId", "ownerID"),
        (DynamicConfigCreate, {"name": "config one", "defaultValues": {}}, "defaultValues", "defaultValue"),
        (ExperimentCreate, {"name": "exp one", "hypotesis": "h"}, "hypotesis", "hypothesis"),
        (
            ExperimentCreate,
            {"name": "exp one", "groups": [{"name": "A", "size": 50, "parameterValue": {}}]},
            "groups[0].parameterValue",
            "parameterValues",
        ),
        (HoldoutCreate, {"name": "hold one", "passPercent": 5}, "passPercent", "passPercentage"),
        (LayerCreate, {"name": "layer one", "descripton": "x"}, "descripton", "description"),
        (
            MetricCreate,
            {"name": "metric one", "type": "event_count", "descripton": "x"},
            "descripton",
            "description",
        ),
        (PromptCreate, {"name": "prompt one", "descripton": "x"}, "descripton", "description"),
        (PipelineCreate, {"name": "pipeline one", "phase": []}, "phase", "phases"),
        (
            SegmentCreate,
            {"name": "segment one", "type": "id_list", "descripton": "x"},
            "descripton",
            "description",
        ),
        (QualifyingEventCreate, {"name": "qe one", "sqlQuery": "select 1"}, "sqlQuery", "sql"),
        (AssignmentSourceCreate, {"name": "as one", "descripton": "x"}, "descripton", "description"),
        (list[InlineTargetingRule], [{**RULE, "condtions": []}], "[0].condtions", "conditions"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_an_unknown_field_names_the_closest_known_field(
    model: Any, data: Any, field: str, meant: str
) -> None:
    assert suggested(model, data, field) == f"{NOT_A_FIELD}; did you mean {meant}?"


@pytest.mark.parametrize("unknown", ["zzz", "x", "colour", "whatever_else"])
def test_an_unknown_field_like_no_known_one_is_only_refused(unknown: str) -> None:
    assert suggested(GateCreate, {"name": "gate one", unknown: 1}, unknown) == NOT_A_FIELD


def test_without_the_model_the_message_is_unchanged() -> None:
    assert errors_of(GatePatch, {"enabled": True}) == {"enabled": NOT_A_FIELD}


class _Cat(BaseModel):
    model_config = ConfigDict(extra="forbid")
    meows: int


class _Dog(BaseModel):
    model_config = ConfigDict(extra="forbid")
    barks: int


class _Pets(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pets: list[_Cat | _Dog]


def test_under_a_union_the_member_named_in_the_path_gives_the_fields() -> None:
    """pydantic puts the member's name in the loc for a union of models: `pets[0]._Cat.meow`."""
    with pytest.raises(ValidationError) as caught:
        _Pets.model_validate({"pets": [{"meow": 1}]})
    loc_errors = [{**e, "loc": ("body", *e["loc"])} for e in caught.value.errors()]
    messages = {e["field"]: e["message"] for e in field_errors(loc_errors, _Pets)}
    assert messages["pets[0]._Cat.meow"] == f"{NOT_A_FIELD}; did you mean meows?"
    assert messages["pets[0]._Dog.meow"] == NOT_A_FIELD  # a dog has no field like it


def test_closest_name_prefers_case_then_containment_then_spelling() -> None:
    known = {"isEnabled", "enabledAt", "name", "description", "rules", "idType"}
    assert closest_name("IsEnabled", known) == "isEnabled"
    assert closest_name("enabled", known) == "isEnabled"  # closer than enabledAt
    assert closest_name("nme", known) == "name"
    assert closest_name("id", known) is None  # too short to be held in idType
    assert closest_name("zzz", known) is None
