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


def present(doc: Doc) -> ReleasePipeline:
    return ReleasePipeline.model_validate({**doc, "isArchived": lifecycle.is_archived(doc)})


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
    data = body.model_dump(mode="json")
    pipeline = StoredPipeline(
        **{field: data[field] for field in _STORED_AS_SENT},
        id=pipeline_id,
        phases=phases,
        **entities.bookkeeping(),
        state=ArchiveState(archived=False),
    )
    _check_size(pipeline)
    return present(entities.insert(KIND, pipeline_id, pipeline.doc()))


def get(pipeline_id: str) -> ReleasePipeline:
    return present(entities.load(KIND, pipeline_id))


def list_pipelines(q: PipelineListQuery) -> Page[ReleasePipeline]:
    docs = [d for d in dynamo.list_all(KIND) if q.includeArchived or not lifecycle.is_archived(d)]
    return page_of(docs, page=q.page, limit=q.limit).map(present)


# --- changes -------------------------------------------------------------------------------------


def update(pipeline_id: str, body: PipelineUpdate) -> ReleasePipeline:
    def change(pipeline: StoredPipeline) -> None:
        lifecycle.refuse_if_archived(pipeline.doc(), LABEL)
        sent = body.changes()
        sent.pop("version", None)
        sent["phases"] = _stored_phases(body.phases, pipeline.phases)
        _check_references(sent["phases"])
        pipeline.set_fields(sent)
        _check_size(pipeline)

    return present(entities.update_stored(KIND, pipeline_id, StoredPipeline, change, body.version))


def users(pipeline_id: str) -> list[Doc]:
    """Gates and dynamic configs that name the pipeline in `releasePipelineID`, archived or not
    (the kinds and fields are services.common.references')."""
    return references.users(KIND, pipeline_id)


describe = references.describe


def delete(pipeline_id: str) -> None:
    doc = entities.load(KIND, pipeline_id)
    found = users(pipeline_id)
    if found:
        raise Conflict(
            f"{LABEL} {pipeline_id!r} is used by {describe(found)}; "
            "point those at another pipeline (or none) first."
        )
    entities.remove(KIND, pipeline_id, doc)


def archive(pipeline_id: str, force: bool, reason: str | None) -> ReleasePipeline:
    def in_use(doc: Doc) -> None:
        if not force:
            active = [u for u in users(pipeline_id) if not lifecycle.is_archived(u)]
            if active:
                raise Conflict(
                    f"{LABEL} {pipeline_id!r} is still used by {describe(active)}; point those at "
                    "another pipeline or archive with forceArchive: true."
                )

    return present(lifecycle.archive(KIND, pipeline_id, reason, label=LABEL, check=in_use))


def unarchive(pipeline_id: str) -> ReleasePipeline:
    return present(lifecycle.unarchive(KIND, pipeline_id, label=LABEL))
