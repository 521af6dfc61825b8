"""Layers: request bodies, the list queries, the stored layer and the response shape (the peer's
layer DTO).

A layer splits its units into 1000 buckets (0 to 999); experiments placed in it (`layerID`)
take disjoint sets of them (`expconsole.services.layers`). Its `parameters` are typed values
whose defaults the layer's experiments override.

A layer's fields are declared once, in `LayerFields`, in the order the table holds them: the
stored layer (`StoredLayer`) is just those, the answer (`Layer`) adds `holdoutIDs` and
`permalink` after them, as the API has always answered them.
"""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, StringConstraints, ValidationInfo, field_validator

from expconsole import kinds
from expconsole.models.base import (
    Description,
    PatchModel,
    RequestModel,
    ResponseModel,
    StrList,
    Tag,
)
from expconsole.models.common import Owner, OwnerIn
from expconsole.models.pagination import PageQuery, Pagination
from expconsole.models.stored import StoredModel

MAX_PARAMETERS = 100

LayerId = Annotated[
    str,
    StringConstraints(min_length=3, max_length=100, pattern=r"^[a-zA-Z0-9_\-]*$"),
    Field(description="3 to 100 characters: letters, digits, underscore, hyphen."),
]
LayerName = Annotated[
    str,
    StringConstraints(min_length=3, max_length=100, pattern=r"^[a-zA-Z0-9_\- ]*$"),
    Field(description="3 to 100 characters: letters, digits, underscore, hyphen, space."),
]
IdType = Annotated[str, StringConstraints(min_length=1, max_length=100)]
ShortText = Annotated[str, StringConstraints(max_length=200)]
ParameterType = Literal["string", "number", "boolean", "object", "array"]

_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


class LayerParameter(RequestModel):
    """A parameter of the layer: its name, its type and a default of that type."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=100)]
    type: ParameterType
    defaultValue: Any = Field(description="A value of `type`.")

    @field_validator("defaultValue")
    @classmethod
    def _matches_type(cls, value: Any, info: ValidationInfo) -> Any:
        kind = info.data.get("type")
        if kind is None:
            return value  # the type itself is wrong: that error names `type`
        ok = isinstance(value, _PYTHON_TYPES[kind])
        if kind == "number" and isinstance(value, bool):
            ok = False
        if not ok:
            raise ValueError(f"must be a value of the parameter's type ({kind})")
        return value


Parameters = Annotated[
    list[LayerParameter],
    Field(max_length=MAX_PARAMETERS, description="At most 100 parameters with distinct names."),
]


class LayerCreate(RequestModel):
    """POST /layers: `name` and `idType` are required (as in the peer); `id` defaults to the name
    in lower case with spaces as underscores."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "checkout",
                    "idType": "userID",
                    "description": "Experiments on the checkout page: each takes its own share of the users.",
                    "parameters": [
                        {"name": "button_color", "type": "string", "defaultValue": "gray"},
                        {"name": "show_express_pay", "type": "boolean", "defaultValue": False},
                    ],
                    "tags": ["checkout"],
                }
            ]
        }
    )

    name: LayerName
    id: LayerId | None = None
    idType: IdType
    description: Description = ""
    parameters: Parameters = Field(default_factory=list)
    targetApps: StrList = Field(default_factory=list)
    tags: list[Tag] = Field(default_factory=list, max_length=100)
    team: ShortText | None = None
    teamID: ShortText | None = None
    creatorID: ShortText | None = None
    creatorEmail: Annotated[str, StringConstraints(max_length=320)] | None = None
    owner: OwnerIn | None = None


class _LayerChanges(PatchModel):
    """Fields an update may change; `version`, when sent, must be the stored one (else 409)."""

    NULLABLE = frozenset({"team", "teamID"})

    name: LayerName | None = None
    description: Description | None = None
    idType: IdType | None = None
    parameters: Parameters | None = None
    targetApps: StrList | None = None
    tags: list[Tag] | None = Field(None, max_length=100)
    team: ShortText | None = None
    teamID: ShortText | None = None
    owner: OwnerIn | None = None
    version: int | None = Field(
        None, ge=1, description="Optimistic lock: the version this change is based on."
    )


class LayerUpdate(_LayerChanges):
    """Full update (POST /layers/{id}): `description` and `parameters` are required, as in the
    peer; other fields left out keep their value."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "description": "Experiments on the checkout page and the cart.",
                    "parameters": [
                        {"name": "button_color", "type": "string", "defaultValue": "gray"},
                        {"name": "show_express_pay", "type": "boolean", "defaultValue": False},
                        {"name": "button_text", "type": "string", "defaultValue": "Pay now"},
                        {"name": "upsell_items", "type": "number", "defaultValue": 3},
                    ],
                }
            ]
        }
    )

    description: Description
    parameters: Parameters


class LayerPatch(_LayerChanges):
    """Partial update (PATCH /layers/{id}): only the fields sent change."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"team": "Payments", "tags": ["checkout", "cart"]}]}
    )


class LayerListQuery(PageQuery):
    """`limit` and `page`, as the peer's list of layers takes them."""


class ParameterOut(ResponseModel):
    name: str
    type: ParameterType
    defaultValue: Any


class LayerFields(ResponseModel):
    """What a layer stores and answers alike, in the order it stores them."""

    id: str
    name: str
    description: str
    idType: str
    isImplicitLayer: bool
    parameters: list[ParameterOut]
    targetApps: list[str]
    tags: list[str]
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


class StoredLayer(StoredModel, LayerFields):
    """A layer as the table holds it (a layer has no archive, so no internal state of its own)."""

    KIND: ClassVar[str] = kinds.LAYER


# A layer as the API answers it: the stored fields, then the two it derives on every read. (A
# docstring would become the schema's description in openapi.json.)
class Layer(LayerFields):
    holdoutIDs: list[str] = Field(description="Holdouts listing this layer in their layerIDs.")
    permalink: str


class LayerEnvelope(ResponseModel):
    message: str
    data: Layer


class LayerListEnvelope(ResponseModel):
    message: str
    data: list[Layer]
    pagination: Pagination
