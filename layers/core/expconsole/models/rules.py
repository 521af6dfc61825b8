"""Conditions and rules, shared by gates, dynamic configs, inline targeting and pipelines.

Each operator fixes the type of `targetValue`; the checks live in field validators so that an
error names the exact field (`rules[0].conditions[1].targetValue`) and the rule broken.
"""

import math
import re
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from expconsole.models.base import Number, PatchModel, RequestModel, ResponseModel

ConditionType = Literal[
    "public",
    "user_id",
    "email",
    "custom_field",
    "app_version",
    "browser_name",
    "browser_version",
    "os_name",
    "os_version",
    "country",
    "locale",
    "environment_tier",
    "ip_address",
    "unit_id",
    "time",
    "url",
    "device_model",
    "target_app",
    "passes_segment",
    "fails_segment",
    "passes_gate",
    "fails_gate",
]

LIST_OPERATORS = frozenset(
    {
        "any",
        "none",
        "any_case_sensitive",
        "none_case_sensitive",
        "str_starts_with_any",
        "str_ends_with_any",
        "str_contains_any",
        "str_contains_none",
    }
)
NUMBER_OPERATORS = frozenset({"gt", "gte", "lt", "lte"})
VERSION_OPERATORS = frozenset(
    {"version_gt", "version_gte", "version_lt", "version_lte", "version_eq", "version_neq"}
)
TIME_OPERATORS = frozenset({"before", "after", "on"})
EQUALITY_OPERATORS = frozenset({"eq", "neq"})
REGEX_OPERATORS = frozenset({"str_matches"})
OPERATORS = (
    LIST_OPERATORS
    | NUMBER_OPERATORS
    | VERSION_OPERATORS
    | TIME_OPERATORS
    | EQUALITY_OPERATORS
    | REGEX_OPERATORS
)

# Types that take no operator: everyone, or membership of a segment or another gate.
NO_OPERATOR_TYPES = frozenset({"public", "passes_segment", "fails_segment", "passes_gate", "fails_gate"})
REFERENCE_TYPES = frozenset({"passes_segment", "fails_segment", "passes_gate", "fails_gate"})
VERSION_TYPES = frozenset({"app_version", "browser_version", "os_version"})
STRING_TYPE_OPERATORS = LIST_OPERATORS | EQUALITY_OPERATORS | REGEX_OPERATORS

ALLOWED_OPERATORS: dict[str, frozenset[str]] = {
    "custom_field": OPERATORS,
    "time": TIME_OPERATORS | NUMBER_OPERATORS,
    **{t: VERSION_OPERATORS | LIST_OPERATORS | EQUALITY_OPERATORS for t in VERSION_TYPES},
}

VERSION_PATTERN = re.compile(r"^\d+(\.\d+)*([-+][0-9A-Za-z.\-]+)?$")
MAX_LIST_VALUES = 1000


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class Condition(RequestModel):
    """One condition of a rule; all conditions of a rule must hold for it to match."""

    type: ConditionType
    operator: str | None = Field(
        None, validate_default=True, description="Not sent for public, segment and gate conditions."
    )
    targetValue: Any = Field(
        None,
        validate_default=True,
        description="Array for list operators; string for version, regex, segment and gate ones; "
        "number for numeric and time ones.",
    )
    field: str | None = Field(
        None, validate_default=True, description="Custom field name (type custom_field)."
    )
    customID: str | None = Field(None, validate_default=True, description="Unit id type (type unit_id).")

    @field_validator("operator")
    @classmethod
    def _operator(cls, operator: str | None, info: ValidationInfo) -> str | None:
        ctype = info.data.get("type")
        if ctype is None:
            return operator
        if ctype in NO_OPERATOR_TYPES:
            if operator is not None:
                raise ValueError(f"is not used with condition type {ctype!r}; leave it out")
            return None
        if operator is None:
            raise ValueError(f"is required for condition type {ctype!r}")
        if operator not in OPERATORS:
            raise ValueError(f"unknown operator {operator!r}; one of {', '.join(sorted(OPERATORS))}")
        allowed = ALLOWED_OPERATORS.get(ctype, STRING_TYPE_OPERATORS)
        if operator not in allowed:
            raise ValueError(
                f"operator {operator!r} does not apply to condition type {ctype!r}; "
                f"use one of {', '.join(sorted(allowed))}"
            )
        return operator

    @field_validator("targetValue")
    @classmethod
    def _target_value(cls, value: Any, info: ValidationInfo) -> Any:
        ctype, operator = info.data.get("type"), info.data.get("operator")
        if ctype is None or (ctype not in NO_OPERATOR_TYPES and operator is None):
            return value  # the type or operator error is reported already
        if ctype == "public":
            if value not in (None, [], ""):
                raise ValueError("is not used with condition type 'public'; leave it out")
            return None
        if ctype in REFERENCE_TYPES:
            what = "a gate id" if ctype.endswith("_gate") else "a segment id"
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"must be {what} (a non-empty string) for condition type {ctype!r}")
            return value
        if operator in LIST_OPERATORS:
            if not isinstance(value, list) or not value:
                raise ValueError(f"must be a non-empty array of strings or numbers for operator {operator!r}")
            if len(value) > MAX_LIST_VALUES:
                raise ValueError(f"has {len(value)} values; at most {MAX_LIST_VALUES} are allowed")
            if not all(isinstance(v, str) or _is_number(v) for v in value):
                raise ValueError(f"must contain only strings or numbers for operator {operator!r}")
            return value
        if operator in NUMBER_OPERATORS:
            if not _is_number(value):
                raise ValueError(f"must be a number for operator {operator!r}")
            return value
        if operator in TIME_OPERATORS:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"must be a time in milliseconds since the epoch for operator {operator!r}")
            return value
        if operator in VERSION_OPERATORS:
            if not isinstance(value, str) or not VERSION_PATTERN.match(value):
                raise ValueError(f"must be a version string such as '1.2.3' for operator {operator!r}")
            return value
        if operator in REGEX_OPERATORS:
            if not isinstance(value, str) or not value:
                raise ValueError("must be a non-empty regular expression string for operator 'str_matches'")
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"is not a valid regular expression: {exc}") from None
            return value
        if not (isinstance(value, str | bool) or _is_number(value)):
            raise ValueError(f"must be a string, number or boolean for operator {operator!r}")
        return value

    @field_validator("field")
    @classmethod
    def _field(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("type") == "custom_field" and not (value and value.strip()):
            raise ValueError("is required for condition type 'custom_field' (the custom field name)")
        return value

    @field_validator("customID")
    @classmethod
    def _custom_id(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("type") == "unit_id" and not (value and value.strip()):
            raise ValueError("is required for condition type 'unit_id' (the unit id type)")
        return value


def _percentage(value: Number) -> Number:
    if not _is_number(value) or not 0 <= value <= 100:
        raise ValueError("must be a number from 0 to 100")
    if abs(round(value * 100) - value * 100) > 1e-6:
        raise ValueError("must have at most two decimals")
    return value


class RolloutStep(RequestModel):
    passPercent: Number
    time: int = Field(ge=0, description="Milliseconds since the epoch.")

    @field_validator("passPercent")
    @classmethod
    def _pass_percent(cls, value: Number) -> Number:
        return _percentage(value)


class RuleFields(RequestModel):
    """What every rule has; ids are assigned by the service and kept across updates."""

    name: str = Field(min_length=1, max_length=100)
    passPercentage: Number = Field(description="0 to 100, at most two decimals.")
    conditions: list[Condition] = Field(max_length=100, description="All must hold; empty means everyone.")
    environments: list[str] | None = Field(None, description="Null: every environment.")
    id: str | None = Field(None, description="Returned on stored rules; send it back to keep the rule's id.")
    baseID: str | None = None
    completedAutomatedRollouts: list[RolloutStep] | None = None
    pendingAutomatedRollouts: list[RolloutStep] | None = None

    @field_validator("passPercentage")
    @classmethod
    def _pass_percentage(cls, value: Number) -> Number:
        return _percentage(value)


class RulePatch(PatchModel):
    """A partial rule update: only the fields sent change."""

    NULLABLE = frozenset({"environments", "completedAutomatedRollouts", "pendingAutomatedRollouts"})

    name: str | None = Field(None, min_length=1, max_length=100)
    passPercentage: Number | None = None
    conditions: list[Condition] | None = Field(None, max_length=100)
    environments: list[str] | None = None
    id: str | None = None
    baseID: str | None = None
    completedAutomatedRollouts: list[RolloutStep] | None = None
    pendingAutomatedRollouts: list[RolloutStep] | None = None

    @field_validator("passPercentage")
    @classmethod
    def _pass_percentage(cls, value: Number | None) -> Number | None:
        return None if value is None else _percentage(value)


def _is_none(value: object) -> bool:
    """`exclude_if` of the optional keys below: stored rules and conditions leave them out rather
    than store null (services.common.rules), so an answer built from these models does too."""
    return value is None


class ConditionOut(ResponseModel):
    type: str
    operator: str | None = Field(None, exclude_if=_is_none)
    targetValue: Any = Field(None, exclude_if=_is_none)
    field: str | None = Field(None, exclude_if=_is_none)
    customID: str | None = Field(None, exclude_if=_is_none)


class RuleOutFields(ResponseModel):
    """An answered rule's keys before those a kind may add (services.common.rules.rule_doc)."""

    id: str
    baseID: str
    name: str
    passPercentage: Number
    conditions: list[ConditionOut]
    environments: list[str] | None


class RolloutsOut(ResponseModel):
    """A rule's automated rollouts: stored after every other key of the rule, a kind's own
    (a segment rule's `returnValue`) included."""

    completedAutomatedRollouts: list[dict[str, Any]] | None = Field(None, exclude_if=_is_none)
    pendingAutomatedRollouts: list[dict[str, Any]] | None = Field(None, exclude_if=_is_none)


# A rule as stored and answered. Pydantic orders fields from the last base to the first: a kind
# adding keys before the rollouts lists its base between these two. (A docstring would become
# the schema's description in openapi.json.)
class RuleOut(RolloutsOut, RuleOutFields):
    pass


def is_everyone_rule(rule: dict[str, Any]) -> bool:
    """A catch-all rule: no conditions (or only `public` ones) in every environment."""
    return rule.get("environments") is None and all(
        c.get("type") == "public" for c in rule.get("conditions", [])
    )


def referenced_ids(rules: list[dict[str, Any]], types: frozenset[str]) -> set[str]:
    """Ids named by conditions of the given types (e.g. gates via passes_gate/fails_gate)."""
    return {
        str(c["targetValue"])
        for rule in rules
        for c in rule.get("conditions", [])
        if c.get("type") in types and c.get("targetValue")
    }
