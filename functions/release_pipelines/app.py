"""Release pipelines: /console/v1/release_pipelines. Parse, call the service, wrap in the envelope."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from expconsole.api.app import build, new_router
from expconsole.api.docs import responses
from expconsole.api.envelope import paged
from expconsole.models.common import ArchiveBody, Message, UnarchiveBody
from expconsole.models.release_pipelines import (
    PipelineCreate,
    PipelineEnvelope,
    PipelineListEnvelope,
    PipelineListQuery,
    PipelineUpdate,
)
from expconsole.services import release_pipelines as pipelines

router = new_router()
BASE = "/console/v1/release_pipelines"
ONE = f"{BASE}/<id>"
TAGS = ["Release pipelines"]


@router.get(
    BASE,
    tags=TAGS,
    summary="List release pipelines",
    responses=responses(200, PipelineListEnvelope, "A page of pipelines"),
)
def list_pipelines(query: Annotated[PipelineListQuery, Query()]) -> PipelineListEnvelope:
    page = pipelines.list_pipelines(query)
    return PipelineListEnvelope.model_validate(paged("Release pipelines listed successfully.", page, router))


@router.post(
    BASE,
    tags=TAGS,
    summary="Create a release pipeline",
    responses=responses(201, PipelineEnvelope, "Created", 409),
)
def create_pipeline(body: PipelineCreate) -> tuple[PipelineEnvelope, int]:
    return PipelineEnvelope(
        message="Release pipeline created successfully.", data=pipelines.create(body)
    ), 201


@router.get(
    ONE,
    tags=TAGS,
    summary="Read a release pipeline",
    responses=responses(200, PipelineEnvelope, "The pipeline", 404),
)
def get_pipeline(id: str) -> PipelineEnvelope:
    return PipelineEnvelope(message="Release pipeline read successfully.", data=pipelines.get(id))


@router.post(
    ONE,
    tags=TAGS,
    summary="Update a release pipeline (its phases are replaced)",
    responses=responses(200, PipelineEnvelope, "Updated", 404, 409),
)
def update_pipeline(id: str, body: PipelineUpdate) -> PipelineEnvelope:
    return PipelineEnvelope(message="Release pipeline updated successfully.", data=pipelines.update(id, body))


@router.delete(
    ONE,
    tags=TAGS,
    summary="Delete a release pipeline no gate or dynamic config uses",
    responses=responses(200, Message, "Deleted", 404, 409),
)
def delete_pipeline(id: str) -> Message:
    pipelines.delete(id)
    return Message(message="Release pipeline deleted successfully.")


@router.put(
    f"{ONE}/archive",
    tags=TAGS,
    summary="Archive a release pipeline",
    responses=responses(200, PipelineEnvelope, "Archived", 404, 409),
)
def archive_pipeline(id: str, body: ArchiveBody | None = None) -> PipelineEnvelope:
    body = body or ArchiveBody()
    archived = pipelines.archive(id, body.forceArchive, body.archiveReason)
    return PipelineEnvelope(message="Release pipeline archived successfully.", data=archived)


@router.put(
    f"{ONE}/unarchive",
    tags=TAGS,
    summary="Unarchive a release pipeline",
    responses=responses(200, PipelineEnvelope, "Unarchived", 404, 409),
)
def unarchive_pipeline(id: str, body: UnarchiveBody | None = None) -> PipelineEnvelope:
    return PipelineEnvelope(message="Release pipeline unarchived successfully.", data=pipelines.unarchive(id))


app, lambda_handler = build(router, key_kind="console")
