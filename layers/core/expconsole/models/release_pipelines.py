"""Release pipelines: request bodies, the list query and the response shape.

A pipeline is a name and an ordered list of phases; each phase waits `timeIntervalMs` (an
integer >= 0) after the previous one, may require a review, and carries rules `{id, name,
conditions, environments}` whose conditions are the shared `Condition` model. Phase and rule
ids are assigned by the service and kept across updates when sent back, as gate rule ids are.

Limits the contract leaves open (chosen here): a pipeline or phase name has 1 to 100
characters and is not blank; at most 100 phases, 500 rules a phase (as gates), 100 conditions
a rule (the shared rule limit).

A pipeline's fields are declared once, in `PipelineFields`, in the order the table holds them:
the stored pipeline (`StoredPipeline`) adds its archive state, the answer (`ReleasePipeline`)
leaves out the two emails it has never answered and adds `isArchived`.
"""

from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, ConfigDict, Field, StringConstraints
from pydantic.json_schema import SkipJsonSchema

from expconsole import kinds
from expconsole.models.base import PatchModel, QueryBool, RequestModel, ResponseModel
from expconsole.models.pagination import PageQuery, Pagination
from expconsole.models.rules import Condition, ConditionOut
from expconsole.models.stored import ArchiveState, StoredModel

MAX_PHASES = 100
MAX_RULES_PER_PHASE = 500


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


Name = Annotated[
    str,
    StringConstraints(min_length=1, max_length=100),
    AfterValidator(_not_blank),
    Field(description="1 to 100 characters, not blank."),
]


class PipelineRule(RequestModel):
    """A phase rule: who the phase rolls out to. No pass percentage: the phase decides when."""

    id: str | None = Field(None, description="Returned on stored rules; send it back to keep the id.")
    name: Name
    conditions: list[Condition] = Field(max_length=100, description="All must hold; empty means everyone.")
    environments: list[str] | None = Field(None, description="Null: every environment.")


class Phase(RequestModel):
    id: str | None = Field(None, description="Returned on stored phases; send it back to keep the id.")
    name: Name
    timeIntervalMs: int = Field(ge=0, description="Milliseconds to wait before this phase starts (>= 0).")
    requiredReview: bool = Field(description="Whether the phase waits for a review before it proceeds.")
    rules: list[PipelineRule] = Field(max_length=MAX_RULES_PER_PHASE)


def _phase(
    name: str, after_days: int, review: bool, rule: str, *conditions: dict[str, Any]
) -> dict[str, Any]:
    return {
        "name": name,
        "timeIntervalMs": after_days * 86_400_000,
        "requiredReview": review,
        "rules": [{"name": rule, "conditions": list(conditions)}],
    }


_EMPLOYEES = {"type": "email", "operator": "str_ends_with_any", "targetValue": ["@example.com"]}
_CANADA = {"type": "country", "operator": "any", "targetValue": ["CA"]}


class PipelineCreate(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "Staged rollout",
                    "phases": [
                        _phase("Employees", 0, False, "Employees", _EMPLOYEES),
                        _phase("Canada", 1, True, "Canada", _CANADA),
                        _phase("Everyone", 3, True, "Everyone"),
                    ],
                }
            ]
        }
    )

    name: Name
    phases: list[Phase] = Field(
        default_factory=list, max_length=MAX_PHASES, description="Executed in this order."
    )


class PipelineUpdate(PatchModel):
    """Full update (POST /release_pipelines/{id}): `phases` replaces the phases; `name` is kept
    when left out. `version`, when sent, must be the stored one (else 409)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "phases": [
                        _phase("Employees", 0, False, "Employees", _EMPLOYEES),
                        _phase("Canada", 2, True, "Canada", _CANADA),
                        _phase(
                            "Canada and the UK",
                            4,
                            True,
                            "Canada and the UK",
                            {**_CANADA, "targetValue": ["CA", "GB"]},
                        ),
                        _phase("Everyone", 7, True, "Everyone"),
                    ]
                }
            ]
        }
    )

    name: Name | None = None
    phases: list[Phase] = Field(max_length=MAX_PHASES, description="Executed in this order.")
    version: int | None = Field(
        None, ge=1, description="Optimistic lock: the version this change is based on."
    )


class PipelineListQuery(PageQuery):
    includeArchived: QueryBool = Field(False, description="Include archived pipelines.")


class PipelineRuleOut(ResponseModel):
    id: str
    name: str
    conditions: list[ConditionOut]
    environments: list[str] | None


class PhaseOut(ResponseModel):
    id: str
    name: str
    timeIntervalMs: int
    requiredReview: bool
    rules: list[PipelineRuleOut]


class PipelineFields(ResponseModel):
    """What a pipeline stores, in the order it stores them; it answers them all but the emails."""

    id: str
    name: str
    phases: list[PhaseOut]
    creatorID: str | None
    creatorName: str
    creatorEmail: str | None
    createdTime: int
    lastModifierID: str | None
    lastModifierName: str | None
    lastModifierEmail: str | None
    lastModifiedTime: int
    version: int


class StoredPipeline(StoredModel, PipelineFields):
    """A pipeline as the table holds it: its fields plus its archive state, never answered as such.

    An item without `_state` reads as not archived, and is written back without it unless a
    change sets it.
    """

    KIND: ClassVar[str] = kinds.RELEASE_PIPELINE

    state: ArchiveState = Field(default_factory=ArchiveState, alias="_state")


# A pipeline as the API answers it: the stored fields but the emails (left out of the answer and
# its schema, as ever), then whether it is archived (derived on every read, as
# services.common.lifecycle reads it); other stored keys are not answered. (A docstring would
# become the schema's description in openapi.json.)
class ReleasePipeline(PipelineFields):
    model_config = ConfigDict(extra="ignore")

    creatorEmail: SkipJsonSchema[str | None] = Field(None, exclude=True)
    lastModifierEmail: SkipJsonSchema[str | None] = Field(None, exclude=True)
    isArchived: bool


class PipelineEnvelope(ResponseModel):
    message: str
    data: ReleasePipeline


class PipelineListEnvelope(ResponseModel):
    message: str
    data: list[ReleasePipeline]
    pagination: Pagination
