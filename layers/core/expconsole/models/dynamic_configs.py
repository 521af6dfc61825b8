"""Dynamic configs: request bodies, the list query, the stored config and the response shape.

A dynamic config is a gate whose rules return values: rules reuse the gate's `RuleFields` and
`RulePatch` and add `returnValue` / `returnValueJson5` and `variants`. Values and schema are
checked by the service (`expconsole.services.json_values`), which needs JSON5 and JSON Schema;
these models check only their shape, so validating a request stays cheap.

A config's fields are declared once, in `DynamicConfigFields`, in the order the table holds them:
the stored config (`StoredDynamicConfig`) adds its archive state; the answer (`DynamicConfig`)
adds `status` and `permalink` after them, answers `targetApps` as one comma-separated string and
leaves out the optional fields the table holds as null, as the API has always answered them.
"""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, StringConstraints, field_validator

from expconsole import kinds
from expconsole.models.base import (
    Description,
    EntityName,
    Number,
    PatchModel,
    QueryBool,
    RequestModel,
    ResponseModel,
    Tag,
)
from expconsole.models.common import Owner, OwnerIn
from expconsole.models.pagination import PageQuery, Pagination
from expconsole.models.rules import RuleFields, RuleOut, RulePatch, _percentage
from expconsole.models.stored import ArchiveState, StoredModel

MAX_TEXT_CHARS = 100_000  # kept equal to json_values.MAX_TEXT_CHARS (not imported: it is lazy)
MAX_RULES = 500
MAX_VARIANTS = 100

ConfigId = Annotated[
    str,
    StringConstraints(min_length=3, max_length=100, pattern=r"^[a-zA-Z0-9_\-.]*$"),
    Field(description="3 to 100 characters: letters, digits, underscore, hyphen, period."),
]
ConfigStatus = Literal["Enabled", "Disabled", "Archived"]
Rate = Literal["0", "100", "INBETWEEN"]
JsonObject = Annotated[dict[str, Any], Field(description="A JSON object.")]
Json5Text = Annotated[
    str,
    Field(
        max_length=MAX_TEXT_CHARS, description="JSON5 text (comments allowed), at most 100,000 characters."
    ),
]
SchemaText = Annotated[
    str,
    Field(
        max_length=MAX_TEXT_CHARS,
        description="A JSON Schema as JSON text (dialect from `$schema`, default 2020-12), "
        "at most 100,000 characters.",
    ),
]
SchemaJson5Text = Annotated[
    str,
    Field(
        max_length=MAX_TEXT_CHARS,
        description="The same schema as JSON5 text (comments allowed); must denote the same "
        "schema as `schema` when both are sent.",
    ),
]


def _app_names(value: object) -> object:
    """`targetApps` as one string (`"web,ios"`) or a list of names: stored as a list."""
    if isinstance(value, str):
        return [name.strip() for name in value.split(",") if name.strip()]
    return value


def _no_comma(name: str) -> str:
    if "," in name:
        raise ValueError(
            "an app name cannot contain a comma (targetApps is answered as one comma-separated string)"
        )
    return name


AppName = Annotated[str, StringConstraints(min_length=1, max_length=100), AfterValidator(_no_comma)]
TargetApps = Annotated[
    list[AppName],
    BeforeValidator(_app_names, json_schema_input_type=str | list[AppName]),
    Field(description="App names: a comma-separated string or an array; answered as one string."),
]


class Variant(RequestModel):
    """A split of a rule's passing units, each variant returning its own value."""

    name: str = Field(min_length=1, max_length=100)
    passPercentage: Number = Field(description="0 to 100, at most two decimals; a rule's sum to 100.")
    id: str | None = Field(None, description="Returned on stored variants; send it back to keep it.")
    returnValue: JsonObject | None = None
    returnValueJson5: Json5Text | None = None

    @field_validator("passPercentage")
    @classmethod
    def _pass_percentage(cls, value: Number) -> Number:
        return _percentage(value)


def _check_variants(variants: list[Variant] | None) -> list[Variant] | None:
    if not variants:
        return variants
    seen: set[str] = set()
    for variant in variants:
        if variant.name in seen:
            raise ValueError(f"variant names must be unique; {variant.name!r} appears twice")
        seen.add(variant.name)
    # Percentages have at most two decimals, so hundredths add up exactly.
    hundredths = sum(round(v.passPercentage * 100) for v in variants)
    if abs(hundredths - 10_000) > 1:
        raise ValueError(
            f"the variants' passPercentage must sum to 100 (within 0.01); they sum to {hundredths / 100:g}"
        )
    return variants


VARIANTS_DESCRIPTION = (
    "Variants of the rule's passing units: unique names, passPercentage summing to 100 "
    "(within 0.01); `[]` removes them."
)


def _value(headline: str, max_items: int, express_pay: bool) -> dict[str, Any]:
    """A value of the examples' config (its schema: `_SCHEMA`)."""
    return {"headline": headline, "maxItems": max_items, "expressPay": express_pay}


_SCHEMA = (
    '{"type": "object", "required": ["headline", "maxItems", "expressPay"], "properties": {'
    '"headline": {"type": "string"}, "maxItems": {"type": "integer", "minimum": 1}, '
    '"expressPay": {"type": "boolean"}}}'
)
# The examples' rule that PATCH /dynamic_configs/{id}/rules changes (models.base: examples).
_US_EXPRESS_PAY = "Express pay in the US"


class DynamicConfigRule(RuleFields):
    """A rule with the value it returns (or the variants it splits into)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "Bulk buyers",
                    "passPercentage": 100,
                    "conditions": [
                        {"type": "custom_field", "field": "cart_size", "operator": "gte", "targetValue": 20}
                    ],
                    "returnValue": _value("Review your bulk order", 500, False),
                }
            ]
        }
    )

    returnValue: JsonObject | None = Field(None, description="The value served to units that pass.")
    returnValueJson5: Json5Text | None = None
    variants: list[Variant] | None = Field(None, max_length=MAX_VARIANTS, description=VARIANTS_DESCRIPTION)

    @field_validator("variants")
    @classmethod
    def _variants(cls, value: list[Variant] | None) -> list[Variant] | None:
        return _check_variants(value)


class DynamicConfigRulePatch(RulePatch):
    """A partial rule update: only the fields sent change (matched by `id` in PATCH /rules)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"passPercentage": 100, "returnValue": _value("Review and pay in one tap", 50, True)}
            ]
        }
    )

    returnValue: JsonObject | None = None
    returnValueJson5: Json5Text | None = None
    variants: list[Variant] | None = Field(None, max_length=MAX_VARIANTS, description=VARIANTS_DESCRIPTION)

    @field_validator("variants")
    @classmethod
    def _variants(cls, value: list[Variant] | None) -> list[Variant] | None:
        return _check_variants(value)


class DynamicConfigCreate(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "checkout settings",
                    "description": "The checkout page's headline, cart limit and express pay button.",
                    "idType": "userID",
                    "defaultValueJson5": "{\n  // shown above the order\n  headline: 'Review your order',\n"
                    "  maxItems: 50,\n  expressPay: false,\n}",
                    "schema": _SCHEMA,
                    "rules": [
                        {
                            "name": _US_EXPRESS_PAY,
                            "passPercentage": 50,
                            "conditions": [
                                {"type": "country", "operator": "any", "targetValue": ["US"]},
                                {
                                    "type": "environment_tier",
                                    "operator": "any",
                                    "targetValue": ["production"],
                                },
                            ],
                            "returnValue": _value("Review your order", 50, True),
                        }
                    ],
                    "tags": ["checkout"],
                    "targetApps": ["web", "ios"],
                }
            ]
        }
    )

    name: EntityName
    id: ConfigId | None = None
    description: Description = ""
    isEnabled: bool = True
    rules: list[DynamicConfigRule] = Field(default_factory=list, max_length=MAX_RULES)
    defaultValue: JsonObject | None = Field(None, description="Served when no rule applies; `{}` if unset.")
    defaultValueJson5: Json5Text | None = None
    schema_: SchemaText | None = Field(None, alias="schema")
    schemaJson5: SchemaJson5Text | None = None
    idType: str = Field("userID", min_length=1, max_length=100)
    tags: list[Tag] = Field(default_factory=list)
    targetApps: TargetApps = Field(default_factory=list)
    creatorID: str | None = None
    creatorEmail: str | None = None
    owner: OwnerIn | None = None
    team: str | None = None
    teamID: str | None = None
    releasePipelineID: str | None = Field(None, description="An existing release pipeline.")
    isTemplate: bool = Field(False, description="Templates are listed only with `isTemplate=true`.")


class _ConfigChanges(PatchModel):
    """Fields an update may change; `version`, when sent, must be the stored one (else 409)."""

    NULLABLE = frozenset({"team", "teamID", "releasePipelineID", "schema_", "schemaJson5"})

    name: EntityName | None = None
    isEnabled: bool | None = None
    description: Description | None = None
    rules: list[DynamicConfigRule] | None = Field(None, max_length=MAX_RULES)
    defaultValue: JsonObject | None = None
    defaultValueJson5: Json5Text | None = None
    schema_: SchemaText | None = Field(None, alias="schema", description="`null` removes the schema.")
    schemaJson5: SchemaJson5Text | None = None
    idType: str | None = Field(None, min_length=1, max_length=100)
    tags: list[Tag] | None = None
    targetApps: TargetApps | None = None
    creatorID: str | None = None
    creatorEmail: str | None = None
    owner: OwnerIn | None = None
    team: str | None = None
    teamID: str | None = None
    releasePipelineID: str | None = None
    version: int | None = Field(
        None, ge=1, description="Optimistic lock: the version this change is based on."
    )


class DynamicConfigUpdate(_ConfigChanges):
    """Full update (POST /dynamic_configs/{id}): `isEnabled`, `description` and `rules` are required."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "isEnabled": True,
                    "description": "Express pay for everyone in the US and Canada.",
                    "rules": [
                        {
                            "name": "Express pay in North America",
                            "passPercentage": 100,
                            "conditions": [
                                {"type": "country", "operator": "any", "targetValue": ["US", "CA"]}
                            ],
                            "returnValue": _value("Review your order", 50, True),
                        }
                    ],
                }
            ]
        }
    )

    isEnabled: bool
    description: Description
    rules: list[DynamicConfigRule] = Field(max_length=MAX_RULES)


class DynamicConfigPatch(_ConfigChanges):
    """Partial update (PATCH /dynamic_configs/{id}): only the fields sent change."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "defaultValueJson5": "{\n  headline: 'Check your order',\n  maxItems: 100,\n"
                    "  expressPay: false,\n}",
                    "tags": ["checkout", "copy"],
                }
            ]
        }
    )


class DynamicConfigRulesAdd(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "rules": [
                        {
                            "name": "Headline test",
                            "passPercentage": 10,
                            "conditions": [
                                {"type": "locale", "operator": "any", "targetValue": ["en-US", "en-GB"]}
                            ],
                            "returnValue": _value("Review your order", 50, False),
                            "variants": [
                                {
                                    "name": "Short",
                                    "passPercentage": 50,
                                    "returnValue": _value("Your order", 50, False),
                                },
                                {
                                    "name": "Friendly",
                                    "passPercentage": 50,
                                    "returnValueJson5": "{headline: 'Almost there!', maxItems: 50, "
                                    "expressPay: false}",
                                },
                            ],
                        }
                    ]
                }
            ]
        }
    )

    rules: list[DynamicConfigRule] = Field(min_length=1, max_length=MAX_RULES)


class DynamicConfigRulesUpdate(RequestModel):
    """The rules to change, each named by its `id` (GET /dynamic_configs/{id}/rules lists them)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"rules": [{"id": "7pW2kF9xLr4TzQ1mVb8NsH", "name": _US_EXPRESS_PAY, "passPercentage": 75}]}
            ]
        }
    )

    rules: list[DynamicConfigRulePatch] = Field(min_length=1, max_length=MAX_RULES)


class DynamicConfigListQuery(PageQuery):
    idType: list[str] | None = Field(None, description="Any of these id types (comma-separated).")
    rolloutRate: list[Rate] | None = Field(None, description="As for gates, over the config's rules.")
    releasePipelineID: str | None = None
    teamID: str | None = None
    targetAppID: str | None = None
    includeArchived: QueryBool = False
    isTemplate: QueryBool | None = Field(
        None, description="`true`: only templates; `false` or absent: only configs that are not templates."
    )
    creatorName: str | None = None
    creatorID: str | None = None
    tags: list[str] | None = Field(None, description="Configs carrying any of these tags.")


def _absent(value: object) -> bool:
    """`exclude_if` of the keys answered only when set: a rule without variants stores no
    `variants` key, and an answer leaves out the optional fields a config stores as null."""
    return value is None


class VariantOut(ResponseModel):
    id: str
    name: str
    passPercentage: Number
    returnValue: dict[str, Any]
    returnValueJson5: str


# A rule as stored and answered: the rule's keys, its rollouts, then its value and variants
# (services.dynamic_configs). (A docstring would become the schema's description.)
class DynamicConfigRuleOut(RuleOut):
    returnValue: dict[str, Any]
    returnValueJson5: str
    variants: list[VariantOut] | None = Field(None, exclude_if=_absent)


class DynamicConfigFields(ResponseModel):
    """What a dynamic config stores and answers alike, in the order it stores them."""

    id: str
    name: str
    description: str
    idType: str
    isEnabled: bool
    rules: list[DynamicConfigRuleOut]
    defaultValue: dict[str, Any]
    defaultValueJson5: str
    schema_: str | None = Field(alias="schema")
    schemaJson5: str | None
    releasePipelineID: str | None
    isTemplate: bool
    checksPerHour: Number
    tags: list[str]
    targetApps: list[str]
    holdoutIDs: list[str]
    team: str | None
    teamID: str | None
    owner: Owner
    creatorID: str | None
    creatorName: str
    creatorEmail: str | None
    createdTime: int
    lastModifierID: str | None
    lastModifierName: str | None
    lastModifierEmail: str | None
    lastModifiedTime: int
    version: int


class StoredDynamicConfig(StoredModel, DynamicConfigFields):
    """A dynamic config as the table holds it: its fields (the optional ones null when unset)
    plus its archive state, never answered as such. An item without `_state` reads as not
    archived, and is written back without it unless a change sets it."""

    KIND: ClassVar[str] = kinds.DYNAMIC_CONFIG

    state: ArchiveState = Field(default_factory=ArchiveState, alias="_state")


# A dynamic config as the API answers it: the stored fields, where they are stored, except that
# `targetApps` is one comma-separated string and the optional fields are left out when unset;
# then those derived on every read. (A docstring would become the schema's description.)
class DynamicConfig(DynamicConfigFields):
    schema_: str | None = Field(
        None, alias="schema", exclude_if=_absent, description="Left out when the config has none."
    )
    schemaJson5: str | None = Field(None, exclude_if=_absent)
    releasePipelineID: str | None = Field(None, exclude_if=_absent)
    targetApps: str = Field(description="App names, comma-separated.")  # type: ignore[assignment]
    team: str | None = Field(None, exclude_if=_absent)
    teamID: str | None = Field(None, exclude_if=_absent)
    status: ConfigStatus
    permalink: str


class DynamicConfigEnvelope(ResponseModel):
    message: str
    data: DynamicConfig


class DynamicConfigListEnvelope(ResponseModel):
    message: str
    data: list[DynamicConfig]
    pagination: Pagination


class RulesOfConfig(ResponseModel):
    rules: list[DynamicConfigRuleOut]


class DynamicConfigRulesEnvelope(ResponseModel):
    message: str
    data: list[RulesOfConfig]
    pagination: Pagination


class DynamicConfigRuleEnvelope(ResponseModel):
    message: str
    data: DynamicConfigRuleOut
