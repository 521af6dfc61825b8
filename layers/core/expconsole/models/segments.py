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

A segment's fields are declared once: `SegmentFields` (what every segment stores and answers)
and `SegmentContent` (its rules or its ids' count, by type). The stored segment
(`StoredSegment`) stores its internal state between the two, the answer (`Segment`) adds
`isArchived` after them: each in the order the table and the API have always had them.
"""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from expconsole import kinds
from expconsole.models.base import AnyRootModel, Description, QueryBool, RequestModel, ResponseModel, Tag
from expconsole.models.pagination import PageQuery, Pagination
from expconsole.models.rules import RolloutsOut, RuleFields, RuleOutFields
from expconsole.models.stored import ArchiveState, StoredModel

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


# Request field types that the create and the rules models share.
SegmentRuleList = Annotated[list[SegmentRule], Field(max_length=MAX_RULES)]
IdType = Annotated[str, Field(min_length=1, max_length=100)]


class SegmentCreate(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "beta testers",
                    "type": "id_list",
                    "description": "Users who joined the beta programme in the app's settings.",
                    "idType": "userID",
                    "tags": ["beta"],
                },
                {
                    "name": "enterprise customers",
                    "type": "rule_based",
                    "description": "Users of accounts on the enterprise plan.",
                    "idType": "userID",
                    "rules": [
                        {
                            "name": "Enterprise plan",
                            "passPercentage": 100,
                            "conditions": [
                                {
                                    "type": "custom_field",
                                    "field": "plan",
                                    "operator": "any",
                                    "targetValue": ["enterprise"],
                                }
                            ],
                        }
                    ],
                },
            ]
        }
    )

    name: SegmentName
    id: SegmentId | None = None
    type: SegmentType = Field(description="`rule_based` or `id_list`; fixed once created.")
    description: Description = ""
    idType: IdType = "userID"
    tags: list[Tag] = Field(default_factory=list)
    creatorID: str | None = None
    creatorEmail: str | None = None
    team: str | None = None
    teamID: str | None = None
    rules: SegmentRuleList | None = Field(None, description="rule_based only.")


class SegmentRules(AnyRootModel):
    """POST /segments/{id}/conditional: the segment's new rules, replacing the old ones.

    The body is the peer's bare array of rules (errors name `[0].conditions[1].targetValue`);
    `{"rules": [...]}` is accepted too.
    """

    # `root` annotated, not `RootModel[...]`: that parametrized class would be built at import.
    model_config = ConfigDict(
        strict=True,
        defer_build=True,
        json_schema_extra={
            "examples": [
                [
                    {
                        "name": "Enterprise and business plans",
                        "passPercentage": 100,
                        "conditions": [
                            {
                                "type": "custom_field",
                                "field": "plan",
                                "operator": "any",
                                "targetValue": ["enterprise", "business"],
                            }
                        ],
                    },
                    {
                        "name": "Company email addresses",
                        "passPercentage": 100,
                        "conditions": [
                            {
                                "type": "email",
                                "operator": "str_ends_with_any",
                                "targetValue": ["@acme.com", "@globex.com"],
                            }
                        ],
                    },
                ]
            ]
        },
    )

    root: SegmentRuleList

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

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"ids": ["user-1842", "user-2907", "user-3310"]}]}
    )

    ids: list[UnitId] = Field(min_length=1, max_length=MAX_IDS_PER_REQUEST, description="1 to 1000 ids.")


class SegmentListQuery(PageQuery):
    includeArchived: QueryBool = Field(False, description="Include archived segments.")


def _absent(value: object) -> bool:
    """`exclude_if` of the keys a segment stores only for its type or when sent: an answer
    leaves them out as the stored item does, rather than answer null."""
    return value is None


class _ReturnValue(ResponseModel):
    returnValue: dict[str, Any] | None = Field(None, exclude_if=_absent)


# A segment rule as stored and answered: `returnValue`, when sent, between the rule's fields
# and its rollouts (models.rules.RuleOut). (A docstring would become the schema's description.)
class SegmentRuleOut(RolloutsOut, _ReturnValue, RuleOutFields):
    pass


class SegmentFields(ResponseModel):
    """What every segment stores and answers alike, in the order it answers them."""

    id: str
    name: str
    type: SegmentType
    description: str
    idType: str
    isEnabled: bool
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


class SegmentContent(ResponseModel):
    """What a segment holds by type, stored after its internal state and answered after its
    other fields; the other type's key is absent, not null."""

    rules: list[SegmentRuleOut] | None = Field(
        None, exclude_if=_absent, description="rule_based segments only."
    )
    count: int | None = Field(
        None, exclude_if=_absent, description="id_list segments only: how many ids the list holds."
    )


class SegmentState(ArchiveState):
    """A segment's `_state`: archived, and for an id_list segment the key of its ids
    (store/segment_ids.py)."""

    idListKey: str | None = None


class _StoredSegmentState(StoredModel):
    state: SegmentState = Field(default_factory=SegmentState, alias="_state")


class StoredSegment(SegmentContent, _StoredSegmentState, SegmentFields):
    """A segment as the table holds it: its fields, its `_state`, then its rules or count (bases
    listed last to first, pydantic's field order). An item without `_state` reads as not
    archived, and is written back without it unless a change sets it."""

    KIND: ClassVar[str] = kinds.SEGMENT


# A segment as the API answers it: the stored fields, then whether it is archived (derived on
# every read, as services.common.lifecycle reads it). (A docstring would become the schema's
# description in openapi.json.)
class Segment(SegmentContent, SegmentFields):
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
