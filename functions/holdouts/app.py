"""Holdouts: /console/v1/holdouts. Parse, call the service, wrap in the envelope."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from expconsole.api.app import build, new_router
from expconsole.api.docs import responses
from expconsole.api.envelope import paged
from expconsole.models.common import ArchiveBody, Message, UnarchiveBody
from expconsole.models.holdouts import (
    Holdout,
    HoldoutCreate,
    HoldoutEnvelope,
    HoldoutListEnvelope,
    HoldoutListQuery,
    HoldoutPatch,
    HoldoutUpdate,
)
from expconsole.services import holdouts

router = new_router()
BASE = "/console/v1/holdouts"
ONE = f"{BASE}/<id>"
TAGS = ["Holdouts"]


def _updated(holdout: Holdout) -> HoldoutEnvelope:
    return HoldoutEnvelope(message="Holdout updated successfully.", data=holdout)


@router.post(
    BASE, tags=TAGS, summary="Create a holdout", responses=responses(201, HoldoutEnvelope, "Created", 409)
)
def create_holdout(body: HoldoutCreate) -> tuple[HoldoutEnvelope, int]:
    return HoldoutEnvelope(message="Holdout created successfully.", data=holdouts.create(body)), 201


@router.get(
    BASE,
    tags=TAGS,
    summary="List holdouts",
    responses=responses(200, HoldoutListEnvelope, "A page of holdouts"),
)
def list_holdouts(query: Annotated[HoldoutListQuery, Query()]) -> HoldoutListEnvelope:
    page = holdouts.list_holdouts(query)
    return HoldoutListEnvelope.model_validate(paged("Holdouts listed successfully.", page, router))


@router.get(
    ONE, tags=TAGS, summary="Read a holdout", responses=responses(200, HoldoutEnvelope, "The holdout", 404)
)
def get_holdout(id: str) -> HoldoutEnvelope:
    return HoldoutEnvelope(message="Holdout read successfully.", data=holdouts.get(id))


@router.post(
    ONE,
    tags=TAGS,
    summary="Fully update a holdout",
    responses=responses(200, HoldoutEnvelope, "Updated", 404, 409),
)
def update_holdout(id: str, body: HoldoutUpdate) -> HoldoutEnvelope:
    return _updated(holdouts.full_update(id, body))


@router.patch(
    ONE,
    tags=TAGS,
    summary="Partially update a holdout",
    responses=responses(200, HoldoutEnvelope, "Updated", 404, 409),
)
def patch_holdout(id: str, body: HoldoutPatch) -> HoldoutEnvelope:
    return _updated(holdouts.patch(id, body))


@router.delete(
    ONE,
    tags=TAGS,
    summary="Delete a holdout (its experiments leave it)",
    responses=responses(200, Message, "Deleted", 404, 409),
)
def delete_holdout(id: str) -> Message:
    holdouts.delete(id)
    return Message(message="Holdout deleted successfully.")


@router.put(
    f"{ONE}/archive",
    tags=TAGS,
    summary="Archive a holdout (its experiments leave it)",
    responses=responses(200, HoldoutEnvelope, "Archived", 404, 409),
)
def archive_holdout(id: str, body: ArchiveBody | None = None) -> HoldoutEnvelope:
    body = body or ArchiveBody()
    return _updated(holdouts.archive(id, body.archiveReason))


@router.put(
    f"{ONE}/unarchive",
    tags=TAGS,
    summary="Unarchive a holdout",
    responses=responses(200, HoldoutEnvelope, "Unarchived", 404, 409),
)
def unarchive_holdout(id: str, body: UnarchiveBody | None = None) -> HoldoutEnvelope:
    return _updated(holdouts.unarchive(id))


app, lambda_handler = build(router, key_kind="console")
