"""Release pipelines: create, read, list, full update, delete, archive and unarchive.

- Ids: a pipeline gets a random id (the peer's create takes none). Phases and their rules get
  ids from the service; a phase or rule sent back with its `id` keeps it (a rule may move to
  another phase), an unknown id is a 400 naming it, and so is an id sent twice. On create
  there is nothing to keep, so any id is unknown.
- Conditions naming a gate (`passes_gate`/`fails_gate`) or a segment (`passes_segment`/
  `fails_segment`) must name an existing one.
- Users: gates and dynamic configs whose `releasePipelineID` is the pipeline. Deleting a used
  pipeline is a 409 naming them (archived users included, as they could be unarchived);
  archiving one is a 409 naming its unarchived users unless `forceArchive` is true.
- Archive is soft: archived pipelines leave the list unless `includeArchived=true`, answer
  reads, and refuse updates (400) until unarchived. `isArchived` says which.
- The response carries the contract's fields plus `creatorName`, `lastModifierName`,
  `version` and `isArchived`; every change bumps `version` and `lastModifiedTime`.
"""

from __future__ import annotations

from collections.abc import Sequence

from expconsole import kinds
from expconsole.errors import Conflict
from expconsole.models.pagination import Page, page_of
from expconsole.models.release_pipelines import (
    Phase,
    PhaseOut,
    PipelineCreate,
    PipelineFields,
    PipelineListQuery,
    PipelineRule,
    PipelineRuleOut,
    PipelineUpdate,
    ReleasePipeline,
    StoredPipeline,
)
from expconsole.models.rules import RulePatch
from expconsole.models.stored import ArchiveState
from expconsole.services import entities
from expconsole.services.common import lifecycle, references, size
from expconsole.services.common import rules as rules_common
from expconsole.services.entities import Doc
from expconsole.store import dynamo

KIND = kinds.RELEASE_PIPELINE
LABEL = "Release pipeline"


def present(pipeline: StoredPipeline) -> ReleasePipeline:
    return ReleasePipeline.model_validate(
        {**pipeline.doc(), "isArchived": lifecycle.entity_is_archived(pipeline)}
    )


# --- phases and rules ----------------------------------------------------------------------------


RULES: rules_common.RuleKind[PipelineRule, RulePatch, PipelineRuleOut] = rules_common.RuleKind(
    owner="pipeline", label=LABEL, stored=PipelineRuleOut, hint="; leave the id out for a new one"
)


def _stored_phases(given: Sequence[Phase], existing: Sequence[PhaseOut]) -> list[PhaseOut]:
    """Phases as stored: ids sent back are kept, the others are new; a rule may move to another
    phase, so its id is looked up, and may be sent once, across all phases."""
    phase_ids = rules_common.assign_ids(
        (p.id for p in given), existing, "phases", "pipeline", RULES.hint, what="phase"
    )
    known_rules = [rule for phase in existing for rule in phase.rules]
    seen_rules: set[str] = set()
    out = []
    for p_index, (phase, (phase_id, _, _)) in enumerate(zip(given, phase_ids, strict=True)):
        rules = rules_common.stored_rules(
            RULES, phase.rules, known_rules, f"phases[{p_index}].rules", seen=seen_rules
        )
        out.append(
            PhaseOut(
                id=phase_id,
                name=phase.name,
                timeIntervalMs=phase.timeIntervalMs,
                requiredReview=phase.requiredReview,
                rules=rules,
            )
        )
    return out


def _check_references(phases: list[PhaseOut]) -> None:
    """Gate and segment conditions must name existing entities: else a 400 naming the field."""
    rules_common.check_conditions(
        (f"phases[{p_index}].rules[{r_index}]", rule)
        for p_index, phase in enumerate(phases)
        for r_index, rule in enumerate(phase.rules)
    )


def _check_size(pipeline: StoredPipeline) -> None:
    size.check_stored_size(pipeline.doc(), "release pipeline", "Use fewer phases, rules or condition values.")


# --- create, read, list --------------------------------------------------------------------------


# Create fields stored as sent; the others are stored as `create` derives them.
_STORED_AS_SENT = frozenset(PipelineCreate.model_fields.keys() & PipelineFields.model_fields.keys()) - {
    "phases"
}


def create(body: PipelineCreate) -> ReleasePipeline:
    pipeline_id = entities.new_id()
    phases = _stored_phases(body.phases, [])
    _check_references(phases)
    pipeline = StoredPipeline(
        **body.model_dump(mode="json", include=set(_STORED_AS_SENT)),
        id=pipeline_id,
        phases=phases,
        **entities.bookkeeping(),
        state=ArchiveState(archived=False),
    )
    _check_size(pipeline)
    return present(entities.insert(pipeline))


def get(pipeline_id: str) -> ReleasePipeline:
    return present(entities.load(StoredPipeline, pipeline_id))


def list_pipelines(q: PipelineListQuery) -> Page[ReleasePipeline]:
    stored = [StoredPipeline.read(d) for d in dynamo.list_all(KIND)]
    shown = [p for p in stored if q.includeArchived or not lifecycle.entity_is_archived(p)]
    return page_of(shown, page=q.page, limit=q.limit).map(present)


# --- changes -------------------------------------------------------------------------------------


def update(pipeline_id: str, body: PipelineUpdate) -> ReleasePipeline:
    pipeline = entities.current(StoredPipeline, pipeline_id, body.version)
    lifecycle.refuse_if_archived(pipeline, LABEL)
    phases = _stored_phases(body.phases, pipeline.phases)
    _check_references(phases)
    if body.name is not None:
        pipeline.name = body.name
    pipeline.phases = phases
    _check_size(pipeline)
    return present(entities.replace(pipeline))


def users(pipeline_id: str) -> list[Doc]:
    """Gates and dynamic configs that name the pipeline in `releasePipelineID`, archived or not
    (the kinds and fields are services.common.references')."""
    return references.users(KIND, pipeline_id)


describe = references.describe


def delete(pipeline_id: str) -> None:
    pipeline = entities.load(StoredPipeline, pipeline_id)
    found = users(pipeline_id)
    if found:
        raise Conflict(
            f"{LABEL} {pipeline_id!r} is used by {describe(found)}; "
            "point those at another pipeline (or none) first."
        )
    entities.remove(pipeline)


def archive(pipeline_id: str, force: bool, reason: str | None) -> ReleasePipeline:
    pipeline = entities.load(StoredPipeline, pipeline_id)
    lifecycle.refuse_archiving_twice(pipeline, LABEL)
    if not force:
        active = [u for u in users(pipeline_id) if not lifecycle.is_archived(u)]
        if active:
            raise Conflict(
                f"{LABEL} {pipeline_id!r} is still used by {describe(active)}; point those at "
                "another pipeline or archive with forceArchive: true."
            )
    pipeline.state = lifecycle.archived_state(pipeline.state, reason)
    return present(entities.replace(pipeline))


def unarchive(pipeline_id: str) -> ReleasePipeline:
    return present(lifecycle.unarchive(StoredPipeline, pipeline_id, label=LABEL))
