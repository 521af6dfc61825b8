"""Prompts (AI configs): /console/v1/prompts. Parse, call the service, wrap in the envelope."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from expconsole.api.app import build, new_router
from expconsole.api.docs import responses
from expconsole.api.envelope import paged
from expconsole.models.common import ArchiveBody, UnarchiveBody
from expconsole.models.prompts import (
    PromptCreate,
    PromptEnvelope,
    PromptListEnvelope,
    PromptListQuery,
    PromptPatch,
)
from expconsole.services import prompts

router = new_router()
BASE = "/console/v1/prompts"
ONE = f"{BASE}/<id>"
TAGS = ["Prompts"]


@router.get(
    BASE, tags=TAGS, summary="List prompts", responses=responses(200, PromptListEnvelope, "A page of prompts")
)
def list_prompts(query: Annotated[PromptListQuery, Query()]) -> PromptListEnvelope:
    page = prompts.list_prompts(query)
    return PromptListEnvelope.model_validate(paged("Prompts listed successfully.", page, router))


@router.post(
    BASE, tags=TAGS, summary="Create a prompt", responses=responses(201, PromptEnvelope, "Created", 409)
)
def create_prompt(body: PromptCreate) -> tuple[PromptEnvelope, int]:
    return PromptEnvelope(message="Prompt created successfully.", data=prompts.create(body)), 201


@router.get(
    ONE, tags=TAGS, summary="Read a prompt", responses=responses(200, PromptEnvelope, "The prompt", 404)
)
def get_prompt(id: str) -> PromptEnvelope:
    return PromptEnvelope(message="Prompt read successfully.", data=prompts.get(id))


@router.patch(
    ONE,
    tags=TAGS,
    summary="Change a prompt's description, targetApps, team or teamID",
    responses=responses(200, PromptEnvelope, "Updated", 404, 409),
)
def patch_prompt(id: str, body: PromptPatch) -> PromptEnvelope:
    return PromptEnvelope(message="Prompt updated successfully.", data=prompts.patch(id, body))


@router.put(
    f"{ONE}/archive",
    tags=TAGS,
    summary="Archive a prompt",
    responses=responses(200, PromptEnvelope, "Archived", 404, 409),
)
def archive_prompt(id: str, body: ArchiveBody | None = None) -> PromptEnvelope:
    body = body or ArchiveBody()
    return PromptEnvelope(
        message="Prompt archived successfully.", data=prompts.archive(id, body.archiveReason)
    )


@router.put(
    f"{ONE}/unarchive",
    tags=TAGS,
    summary="Unarchive a prompt",
    responses=responses(200, PromptEnvelope, "Unarchived", 404, 409),
)
def unarchive_prompt(id: str, body: UnarchiveBody | None = None) -> PromptEnvelope:
    return PromptEnvelope(message="Prompt unarchived successfully.", data=prompts.unarchive(id))


app, lambda_handler = build(router, key_kind="console")
