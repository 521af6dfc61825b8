"""Holdouts: request bodies, the list query, the stored holdout and the response shape.

Limits are the contract's where it gives them (`passPercentage` 0 to 100, names and
descriptions as for experiments) and the peer's otherwise (name pattern, required fields of the
full update). `experimentIDs` holds at most 49 ids: a holdout and every experiment it holds
change in one DynamoDB transaction (at most 50 entities), so that deleting or archiving it can
detach them all at once.

A holdout's fields are declared once, in `HoldoutFields`, in the order the table holds them: the
stored holdout (`StoredHoldout`) adds its archive state, the answer (`Holdout`) adds `isArchived`
and `permalink` after them, as the API has always answered them.
"""

from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, ConfigDict, Field, StringConstraints, WithJsonSchema

from expconsole import kinds
from expconsole.models.base import (
    Description,
    Number,
    PatchModel,
    QueryBool,
    RequestModel,
    ResponseModel,
    StrList,
    Tag,
)
from expconsole.models.common import MetricRef, Owner, OwnerIn
from expconsole.models.pagination import PageQuery, Pagination
from expconsole.models.stored import ArchiveState, StoredModel

MAX_EXPERIMENTS = 49  # + the holdout itself = 50 entities, one transaction (store.dynamo)
MAX_GATES = 100
MAX_LAYERS = 100

HoldoutId = Annotated[
    str,
    StringConstraints(min_length=3, max_length=100, pattern=r"^[a-zA-Z0-9_\-]*$"),
    Field(description="3 to 100 characters: letters, digits, underscore, hyphen."),
]
HoldoutName = Annotated[
    str,
    StringConstraints(min_length=3, max_length=100, pattern=r"^[a-zA-Z0-9_\- ]*$"),
    Field(description="3 to 100 characters: letters, digits, underscore, hyphen, space."),
]
RefId = Annotated[str, StringConstraints(min_length=1, max_length=100)]
ShortText = Annotated[str, StringConstraints(max_length=200)]
IdType = Annotated[str, StringConstraints(min_length=1, max_length=100)]
TargetingGateId = Annotated[
    str,
    StringConstraints(max_length=100),
    Field(description="A gate id; empty or null for none."),
]


def _pass_percentage(value: int | float) -> int | float:
    if not 0 <= value <= 100:
        raise ValueError("must be from 0 to 100")
    if abs(round(value * 100) - value * 100) > 1e-6:
        raise ValueError("must have at most two decimals")
    return value


PassPercentage = Annotated[
    Number,
    AfterValidator(_pass_percentage),
    WithJsonSchema({"type": "number", "minimum": 0, "maximum": 100}),
    Field(description="Percent of units held out: 0 to 100, at most two decimals."),
]
GateIDs = Annotated[list[RefId], Field(max_length=MAX_GATES, description="Gates held out (at most 100).")]
ExperimentIDs = Annotated[
    list[RefId],
    Field(
        max_length=MAX_EXPERIMENTS,
        description="Experiments held out (at most 49); each lists this holdout in its holdoutIDs.",
    ),
]
LayerIDs = Annotated[list[RefId], Field(max_length=MAX_LAYERS, description="Layers held out (at most 100).")]


class HoldoutCreate(RequestModel):
    """POST /holdouts: only `name` is required; `id` defaults to the name in lower case with
    spaces as underscores."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "checkout holdout 2025",
                    "description": "5% of users see none of this year's checkout changes: their "
                    "combined effect, measured against them.",
                    "idType": "userID",
                    "passPercentage": 5,
                    "monitoringMetrics": [{"name": "revenue", "type": "sum"}],
                    "tags": ["checkout"],
                }
            ]
        }
    )

    name: HoldoutName
    id: HoldoutId | None = None
    description: Description = ""
    idType: IdType = "userID"
    isEnabled: bool = True
    isGlobal: bool = False
    passPercentage: PassPercentage = 0
    gateIDs: GateIDs = Field(default_factory=list)
    experimentIDs: ExperimentIDs = Field(default_factory=list)
    layerIDs: LayerIDs = Field(default_factory=list)
    targetingGateID: TargetingGateId | None = None
    targetApps: StrList = Field(default_factory=list)
    tags: list[Tag] = Field(default_factory=list, max_length=100)
    team: ShortText | None = None
    teamID: ShortText | None = None
    monitoringMetrics: list[MetricRef] = Field(default_factory=list, max_length=100)
    creatorID: ShortText | None = None
    creatorEmail: Annotated[str, StringConstraints(max_length=320)] | None = None
    owner: OwnerIn | None = None


class _HoldoutChanges(PatchModel):
    """Fields an update may change; `version`, when sent, must be the stored one (else 409)."""

    NULLABLE = frozenset({"targetingGateID", "team", "teamID"})

    name: HoldoutName | None = None
    description: Description | None = None
    idType: IdType | None = None
    isEnabled: bool | None = None
    isGlobal: bool | None = None
    passPercentage: PassPercentage | None = None
    gateIDs: GateIDs | None = None
    experimentIDs: ExperimentIDs | None = None
    layerIDs: LayerIDs | None = None
    targetingGateID: TargetingGateId | None = None
    targetApps: StrList | None = None
    tags: list[Tag] | None = Field(None, max_length=100)
    team: ShortText | None = None
    teamID: ShortText | None = None
    monitoringMetrics: list[MetricRef] | None = Field(None, max_length=100)
    owner: OwnerIn | None = None
    version: int | None = Field(
        None, ge=1, description="Optimistic lock: the version this change is based on."
    )


class HoldoutUpdate(_HoldoutChanges):
    """Full update (POST /holdouts/{id}): the peer's required fields must all be sent
    (`targetingGateID` may be null); other fields left out keep their value."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "isEnabled": True,
                    "description": "5% of users see none of this year's checkout changes, the "
                    "button color experiment included.",
                    "passPercentage": 5,
                    "gateIDs": [],
                    "experimentIDs": ["checkout_button_color"],
                    "layerIDs": [],
                    "isGlobal": False,
                    "targetingGateID": None,
                }
            ]
        }
    )

    isEnabled: bool
    description: Description
    passPercentage: PassPercentage
    gateIDs: GateIDs
    experimentIDs: ExperimentIDs
    layerIDs: LayerIDs
    isGlobal: bool
    targetingGateID: TargetingGateId | None


class HoldoutPatch(_HoldoutChanges):
    """Partial update (PATCH /holdouts/{id}): only the fields sent change."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"team": "Payments", "tags": ["checkout", "2025"]}]}
    )


class HoldoutListQuery(PageQuery):
    creatorName: str | None = None
    creatorID: str | None = None
    tags: list[str] | None = Field(None, description="Holdouts carrying any of these tags.")
    includeArchived: QueryBool = Field(False, description="Archived holdouts are listed only when asked for.")


class HoldoutFields(ResponseModel):
    """What a holdout stores and answers alike, in the order it stores them."""

    id: str
    name: str
    description: str
    idType: str
    isEnabled: bool
    isGlobal: bool
    passPercentage: Number
    gateIDs: list[str]
    experimentIDs: list[str]
    layerIDs: list[str]
    targetingGateID: str | None
    targetApps: list[str]
    tags: list[str]
    team: str | None
    teamID: str | None
    monitoringMetrics: list[dict[str, Any]]
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


class StoredHoldout(StoredModel, HoldoutFields):
    """A holdout as the table holds it: its fields plus its archive state, never answered as such.

    An item without `_state` reads as not archived, and is written back without it unless a
    change sets it.
    """

    KIND: ClassVar[str] = kinds.HOLDOUT

    state: ArchiveState = Field(default_factory=ArchiveState, alias="_state")


# A holdout as the API answers it: the stored fields, then the two it derives on every read
# (whether it is archived, as services.common.lifecycle reads it, and its permalink). (A docstring
# would become the schema's description in openapi.json.)
class Holdout(HoldoutFields):
    isArchived: bool
    permalink: str


class HoldoutEnvelope(ResponseModel):
    message: str
    data: Holdout


class HoldoutListEnvelope(ResponseModel):
    message: str
    data: list[Holdout]
    pagination: Pagination
