"""Feature gates: request bodies, the list query, the stored gate and the response shape.

A gate's fields are declared once, in `GateFields`: the stored gate (`StoredGate`, plus its
internal state) and the answer (`Gate`, plus what is derived on every read) both extend it, in
the order the API has always answered them. The request models list what a client may send,
with the constrained types declared once below.
"""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from expconsole import kinds
from expconsole.models.base import (
    Description,
    EntityName,
    Number,
    PatchModel,
    QueryBool,
    RequestModel,
    ResponseModel,
    StrList,
    Tag,
)
from expconsole.models.common import MetricRef, Owner, OwnerIn, ReviewSettings, ReviewSettingsIn
from expconsole.models.pagination import PageQuery, Pagination
from expconsole.models.rules import RuleFields, RuleOut, RulePatch
from expconsole.models.stored import StoredModel

GateId = Annotated[
    str,
    StringConstraints(min_length=3, max_length=100, pattern=r"^[a-zA-Z0-9_\-.]*$"),
    Field(description="3 to 100 characters: letters, digits, underscore, hyphen, period."),
]
GateType = Literal["TEMPORARY", "PERMANENT", "STALE", "TEMPLATE"]
TypeReason = Literal[
    "NONE",
    "STALE_PROBABLY_LAUNCHED",
    "STALE_PROBABLY_UNLAUNCHED",
    "STALE_PROBABLY_FORGOTTEN",
    "STALE_NO_RULES",
    "STALE_PROBABLY_DEAD_CHECK",
    "STALE_EMPTY_CHECKS",
    "STALE_ALL_TRUE",
    "STALE_ALL_FALSE",
]
GateStatus = Literal["In Progress", "Launched", "Disabled", "Archived"]
Rate = Literal["0", "100", "INBETWEEN"]


class GateRule(RuleFields):
    """A gate rule: who matches, and what percent of them pass."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "iOS 17 and later",
                    "passPercentage": 50,
                    "conditions": [
                        {"type": "os_name", "operator": "any", "targetValue": ["iOS"]},
                        {"type": "os_version", "operator": "version_gte", "targetValue": "17.0"},
                    ],
                    "environments": ["production"],
                }
            ]
        }
    )


# Request field types that the create and the changes models share.
GateRules = Annotated[list[GateRule], Field(max_length=500)]
DeclaredType = Literal["PERMANENT", "TEMPORARY"]
IdType = Annotated[str, Field(min_length=1, max_length=100)]


# The examples' rule that PATCH /gates/{id}/rules changes (models.base: examples).
_CANADA_AND_UK = "Canada and UK on app 4.2 and later"


class GateCreate(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "new checkout",
                    "description": "The one-page checkout: employees, beta testers, then a quarter of "
                    "Canada and the UK on recent app versions.",
                    "idType": "userID",
                    "tags": ["checkout"],
                    "rules": [
                        {
                            "name": "Employees",
                            "passPercentage": 100,
                            "conditions": [
                                {
                                    "type": "email",
                                    "operator": "str_contains_any",
                                    "targetValue": ["@example.com"],
                                }
                            ],
                        },
                        {
                            "name": "Beta testers",
                            "passPercentage": 100,
                            "conditions": [{"type": "passes_segment", "targetValue": "beta_testers"}],
                        },
                        {
                            "name": _CANADA_AND_UK,
                            "passPercentage": 25,
                            "conditions": [
                                {"type": "country", "operator": "any", "targetValue": ["CA", "GB"]},
                                {"type": "app_version", "operator": "version_gte", "targetValue": "4.2.0"},
                            ],
                        },
                    ],
                    "monitoringMetrics": [{"name": "revenue", "type": "sum"}],
                }
            ]
        }
    )

    name: EntityName
    id: GateId | None = None
    description: Description = ""
    isEnabled: bool = True
    rules: GateRules = Field(default_factory=list)
    tags: list[Tag] = Field(default_factory=list)
    type: DeclaredType = "TEMPORARY"
    idType: IdType = "userID"
    targetApps: StrList = Field(default_factory=list)
    creatorID: str | None = None
    creatorEmail: str | None = None
    team: str | None = None
    teamID: str | None = None
    measureMetricLifts: bool = True
    monitoringMetrics: list[MetricRef] = Field(default_factory=list)
    reviewSettings: ReviewSettingsIn | None = None
    releasePipelineID: str | None = None
    isTemplate: bool = False
    store0100Exposures: bool = False
    owner: OwnerIn | None = None


class _GateChanges(PatchModel):
    """Fields an update may change; `version`, when sent, must be the stored one (else 409)."""

    NULLABLE = frozenset({"team", "teamID", "releasePipelineID", "reviewSettings"})

    name: EntityName | None = None
    isEnabled: bool | None = None
    description: Description | None = None
    rules: GateRules | None = None
    tags: list[Tag] | None = None
    type: DeclaredType | None = None
    idType: IdType | None = None
    targetApps: StrList | None = None
    team: str | None = None
    teamID: str | None = None
    measureMetricLifts: bool | None = None
    monitoringMetrics: list[MetricRef] | None = None
    reviewSettings: ReviewSettingsIn | None = None
    releasePipelineID: str | None = None
    store0100Exposures: bool | None = None
    owner: OwnerIn | None = None
    version: int | None = Field(
        None, ge=1, description="Optimistic lock: the version this change is based on."
    )


class GateUpdate(_GateChanges):
    """Full update (POST /gates/{id}): `isEnabled`, `description` and `rules` are required."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "isEnabled": True,
                    "description": "The one-page checkout, launched to everyone.",
                    "rules": [
                        {"name": "Everyone", "passPercentage": 100, "conditions": [{"type": "public"}]}
                    ],
                }
            ]
        }
    )

    isEnabled: bool
    description: Description
    rules: GateRules


class GatePatch(_GateChanges):
    """Partial update (PATCH /gates/{id}): only the fields sent change."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"type": "PERMANENT", "tags": ["checkout", "payments"], "team": "Payments"}]
        }
    )


class GateRulesAdd(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "rules": [
                        {
                            "name": "Support team",
                            "passPercentage": 100,
                            "conditions": [
                                {
                                    "type": "user_id",
                                    "operator": "any",
                                    "targetValue": ["user-1001", "user-1002"],
                                }
                            ],
                        },
                        {
                            "name": "Large carts on the web",
                            "passPercentage": 10,
                            "conditions": [
                                {
                                    "type": "custom_field",
                                    "field": "cart_value",
                                    "operator": "gte",
                                    "targetValue": 200,
                                },
                                {
                                    "type": "browser_name",
                                    "operator": "any",
                                    "targetValue": ["Chrome", "Firefox", "Safari"],
                                },
                            ],
                        },
                    ]
                }
            ]
        }
    )

    rules: list[GateRule] = Field(min_length=1, max_length=500)


class GateRuleUpdate(RulePatch):
    """One rule's changes, matched by `id` in PATCH /gates/{id}/rules."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"passPercentage": 100, "environments": ["staging", "production"]}]}
    )


class GateRulesUpdate(RequestModel):
    """The rules to change, each named by its `id` (GET /gates/{id}/rules lists them)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"rules": [{"id": "4dM8sR1vQx7ZkT2bNw9LcE", "name": _CANADA_AND_UK, "passPercentage": 50}]}
            ]
        }
    )

    rules: list[GateRuleUpdate] = Field(min_length=1, max_length=500)


class GateListQuery(PageQuery):
    idType: list[str] | None = Field(None, description="Any of these id types (comma-separated).")
    type: GateType | None = None
    typeReason: TypeReason | None = None
    passRate: list[Rate] | None = Field(None, description="Expected pass rate from the configuration.")
    rolloutRate: list[Rate] | None = None
    releasePipelineID: str | None = None
    teamID: str | None = None
    targetAppID: str | None = None
    includeArchived: QueryBool = False
    store0100Exposures: QueryBool | None = None
    creatorName: str | None = None
    creatorID: str | None = None
    tags: list[str] | None = Field(None, description="Gates carrying any of these tags.")


class ReferencesQuery(BaseModel):
    model_config = ConfigDict(defer_build=True)

    limit: int = Field(100, ge=0, le=100, description="0 to 100; 0 returns only the count.")
    page: int = Field(1, ge=1)


class GateFields(ResponseModel):
    """What a gate stores and answers alike, in the order it answers them."""

    id: str
    name: str
    description: str
    idType: str
    isEnabled: bool
    rules: list[RuleOut]
    checksPerHour: Number
    tags: list[str]
    targetApps: list[str]
    holdoutIDs: list[str]
    team: str | None
    teamID: str | None
    reviewSettings: ReviewSettings
    measureMetricLifts: bool
    store0100Exposures: bool
    monitoringMetrics: list[dict[str, Any]]
    releasePipelineID: str | None
    isTemplate: bool
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


class GateState(StoredModel):
    """A gate's `_state`: launched, and archived as services.common.lifecycle records it (an
    item may hold only some of these keys, or others that lifecycle.is_archived reads)."""

    launched: bool = False
    archived: bool = False
    archiveReason: str | None = None
    archivedTime: int | None = None


class StoredGate(StoredModel, GateFields):
    """A gate as the table holds it: its fields plus internal state, never answered as such.

    `_type` is the type its owner declared (the answered `type` is derived from it and the
    rules); `checksPerHour` is stored as 0 and answered from the SDKs' checks. An item without
    `_type` or `_state` reads with the defaults, and is written back without them unless a
    change sets them.
    """

    KIND: ClassVar[str] = kinds.GATE

    declared_type: DeclaredType | None = Field(None, alias="_type")
    state: GateState = Field(default_factory=GateState, alias="_state")


# A gate as the API answers it: the stored fields, then those derived on every read. (A
# docstring would become the schema's description in openapi.json.)
class Gate(GateFields):
    status: GateStatus
    type: GateType
    typeReason: TypeReason
    permalink: str


class GateEnvelope(ResponseModel):
    message: str
    data: Gate


class GateListEnvelope(ResponseModel):
    message: str
    data: list[Gate]
    pagination: Pagination


class GateRulesEnvelope(ResponseModel):
    message: str
    data: dict[str, list[RuleOut]]
