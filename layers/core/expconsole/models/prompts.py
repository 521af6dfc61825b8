"""Prompts (AI configs): request bodies, the list query, the stored prompt and the response shape.

`name` and `displayName` have 3 to 100 characters (letters, digits, underscore, hyphen,
period, space) and `description` at most 1000. A PATCH changes only `description`,
`targetApps`, `team` and `teamID`; any other field is a 400 naming it.

A prompt's fields are declared once, in `PromptFields`: the stored prompt (`StoredPrompt`, plus
its archive state) and the answer (`Prompt`, plus `isArchived`) both extend it, in the order the
API has always answered them.
"""

from typing import ClassVar

from pydantic import ConfigDict, Field

from expconsole import kinds
from expconsole.models.base import (
    Description,
    EntityName,
    PatchModel,
    QueryBool,
    RequestModel,
    ResponseModel,
    StrList,
    Tag,
)
from expconsole.models.common import Owner, OwnerIn
from expconsole.models.pagination import PageQuery, Pagination
from expconsole.models.stored import ArchiveState, StoredModel


class PromptCreate(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "order summary",
                    "displayName": "Order summary assistant",
                    "description": "Summarises the cart in two sentences before payment.",
                    "targetApps": ["web"],
                    "tags": ["checkout", "ai"],
                }
            ]
        }
    )

    name: EntityName
    displayName: EntityName | None = Field(None, description="Same rule as `name`; defaults to it.")
    description: Description = ""
    targetApps: StrList = Field(default_factory=list, description="Target app names (one or a list).")
    team: str | None = None
    teamID: str | None = None
    tags: list[Tag] = Field(default_factory=list)
    creatorID: str | None = None
    creatorEmail: str | None = None
    owner: OwnerIn | None = None


class PromptPatch(PatchModel):
    """PATCH /prompts/{id}: only these fields; `team` and `teamID` may be null to clear them."""

    NULLABLE = frozenset({"team", "teamID"})
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "description": "Summarises the cart in two sentences, delivery date included.",
                    "targetApps": ["web", "ios"],
                    "team": "Payments",
                }
            ]
        }
    )

    description: Description | None = None
    targetApps: StrList | None = None
    team: str | None = None
    teamID: str | None = None


class PromptListQuery(PageQuery):
    includeArchived: QueryBool = Field(False, description="Include archived prompts.")


class PromptFields(ResponseModel):
    """What a prompt stores and answers alike, in the order it answers them."""

    id: str
    name: str
    displayName: str
    description: str
    idType: str
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


class StoredPrompt(StoredModel, PromptFields):
    """A prompt as the table holds it: its fields plus its archive state, never answered as such.

    An item without `_state` reads as not archived, and is written back without it unless a
    change sets it.
    """

    KIND: ClassVar[str] = kinds.PROMPT

    state: ArchiveState = Field(default_factory=ArchiveState, alias="_state")


# A prompt as the API answers it: the stored fields, then whether it is archived (derived on
# every read, as services.common.lifecycle reads it). (A docstring would become the schema's
# description in openapi.json.)
class Prompt(PromptFields):
    isArchived: bool


class PromptEnvelope(ResponseModel):
    message: str
    data: Prompt


class PromptListEnvelope(ResponseModel):
    message: str
    data: list[Prompt]
    pagination: Pagination
