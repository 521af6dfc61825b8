"""Segments: request bodies, queries and the response shape.

A segment is `rule_based` (rules with the shared condition model, set on create or with
POST /segments/{id}/conditional) or `id_list` (a set of unit ids, changed 1 to 1000 ids a
request with PATCH/DELETE /segments/{id}/id_list). The type is fixed at creation, as the
peer's create DTO has it.

Limits, from the peer's DTO where the contract is silent: `name` 3 to 100 characters
(letters, digits, underscore, hyphen, space), `id` 3 to 100 (letters, digits, underscore,
hyphen; defaults to the name in lower case, spaces to underscores), `description` at most
1000. Chosen here: at most 500 rules (as gates); a unit id has 1 to 256 characters (a
DynamoDB sort key holds 1024 bytes).
"""

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, RootModel, StringConstraints, model_validator

from expconsole.models.base import Description, QueryBool, RequestModel, ResponseModel, Tag
from expconsole.models.pagination import PageQuery, Pagination
from expconsole.models.rules import RuleFields, RuleOut

MAX_RULES = 500
MAX_IDS_PER_REQUEST = 1000
MAX_UNIT_ID_LENGTH = 256

SegmentName = Annotated[
    str,
    StringConstraints(min_length=3, max_length=100, pattern=r"^[a-zA-Z0-9_\- ]*$"),
    Field(description="3 to 100 characters: letters, digits, underscore, hyphen, space."),
]
SegmentId = Annotated[
    str,
    StringConstraints(min_length=3, max_length=100, pattern=r"^[a-zA-Z0-9_\-]*$"),
    Field(description="3 to 100 characters: letters, digits, underscore, hyphen."),
]
SegmentType = Literal["rule_based", "id_list"]
UnitId = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_UNIT_ID_LENGTH),
    Field(description=f"1 to {MAX_UNIT_ID_LENGTH} characters."),
]


class SegmentRule(RuleFields):
    """A segment rule: units matching the conditions, `passPercentage` percent of them, are in."""

    returnValue: dict[str, Any] | None = Field(None, description="Accepted as the peer does; stored as sent.")


class SegmentCreate(RequestModel):
    name: SegmentName
    id: SegmentId | None = None
    type: SegmentType = Field(description="`rule_based` or `id_list`; fixed once created.")
    description: Description = ""
    idType: str = Field("userID", min_length=1, max_length=100)
    tags: list[Tag] = Field(default_factory=list)
    creatorID: str | None = None
    creatorEmail: str | None = None
    team: str | None = None
    teamID: str | None = None
    rules: list[SegmentRule] | None = Field(None, max_length=MAX_RULES, description="rule_based only.")


class SegmentRules(RootModel):
    """POST /segments/{id}/conditional: the segment's new rules, replacing the old ones.

    The body is the peer's bare array of rules (errors name `[0].conditions[1].targetValue`);
    `{"rules": [...]}` is accepted too.
    """

    # `root` annotated, not `RootModel[...]`: that parametrized class would be built at import.
    model_config = ConfigDict(strict=True, defer_build=True)

    root: Annotated[list[SegmentRule], Field(max_length=MAX_RULES)]

    @model_validator(mode="before")
    @classmethod
    def _rules_object(cls, value: Any) -> Any:
        if isinstance(value, dict) and set(value) == {"rules"}:
            if not isinstance(value["rules"], list):
                raise ValueError("`rules` must be an array of rules")
            return value["rules"]
        return value


class SegmentIds(RequestModel):
    """Ids to add to or remove from an id-list segment; repeats count once."""

    ids: list[UnitId] = Field(min_length=1, max_length=MAX_IDS_PER_REQUEST, description="1 to 1000 ids.")


class SegmentListQuery(PageQuery):
    includeArchived: QueryBool = Field(False, description="Include archived segments.")


class Segment(ResponseModel):
    id: str
    name: str
    type: SegmentType
    description: str
    idType: str
    isEnabled: bool
    rules: list[RuleOut] | None = Field(None, description="rule_based segments only.")
    count: int | None = Field(None, description="id_list segments only: how many ids the list holds.")
    tags: list[str]
    targetApps: list[str]
    holdoutIDs: list[str]
    team: str | None
    teamID: str | None
    creatorID: str | None
    creatorName: str
    creatorEmail: str | None
    createdTime: int
    lastModifierID: str | None
    lastModifierName: str | None
    lastModifierEmail: str | None
    lastModifiedTime: int
    version: int
    isArchived: bool


class SegmentEnvelope(ResponseModel):
    message: str
    data: Segment


class SegmentListEnvelope(ResponseModel):
    message: str
    data: list[Segment]
    pagination: Pagination


class IdList(ResponseModel):
    name: str
    count: int
    ids: list[str]


class IdListEnvelope(ResponseModel):
    message: str
    data: IdList
    pagination: Pagination
