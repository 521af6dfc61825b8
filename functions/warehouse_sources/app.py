"""Warehouse sources: /console/v1/experiments/qualifying_events and .../assignment_source(s).

Parse, call the service, wrap in the envelope. A `dryRun` create answers 200 (nothing was
created), every other create 201.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BaseModel

from expconsole.api.app import build, new_router
from expconsole.api.docs import responses
from expconsole.api.envelope import paged
from expconsole.api.pagination import PageQuery
from expconsole.models.common import Message
from expconsole.models.warehouse_sources import (
    AssignmentSourceCreate,
    AssignmentSourceEnvelope,
    AssignmentSourceListEnvelope,
    AssignmentSourcePatch,
    AssignmentSourceUpdate,
    QualifyingEventCreate,
    QualifyingEventEnvelope,
    QualifyingEventListEnvelope,
    QualifyingEventUpdate,
)
from expconsole.services import warehouse_sources as sources
from expconsole.services.warehouse_sources import Outcome

router = new_router()
QE_BASE = "/console/v1/experiments/qualifying_events"
QE_ONE = f"{QE_BASE}/<name>"
AS_BASE = "/console/v1/experiments/assignment_sources"
AS_ONE = "/console/v1/experiments/assignment_source/<name>"
QE_TAGS = ["Qualifying events"]
AS_TAGS = ["Assignment sources"]


def _name(raw: str) -> str:
    """The path parameter as sent is still percent-encoded (`Log%20Events`)."""
    return unquote(raw)


def _message(label: str, done: str, outcome: Outcome[Any]) -> str:
    if outcome.dry_run:
        message = f"{label} is valid (dry run: nothing was stored)."
    else:
        message = f"{label} {done} successfully."
    return message + outcome.unchecked


def _created_status(outcome: Outcome[Any]) -> int:
    """A dry run created nothing: 200, not 201."""
    return 200 if outcome.dry_run else 201


def _create_responses(model: type[BaseModel]) -> dict[int, Any]:
    out = responses(201, model, "Created", 409)
    out[200] = {
        "description": "dryRun: the source is valid; nothing was stored",
        "content": {"application/json": {"model": model}},
    }
    return out


# --- qualifying event sources -------------------------------------------------------------------


@router.get(
    QE_BASE,
    tags=QE_TAGS,
    summary="List qualifying event sources",
    responses=responses(200, QualifyingEventListEnvelope, "A page of qualifying event sources"),
)
def list_qualifying_events(query: Annotated[PageQuery, Query()]) -> QualifyingEventListEnvelope:
    page = sources.list_qualifying_events(query)
    return QualifyingEventListEnvelope.model_validate(
        paged("Qualifying events listed successfully.", page, router)
    )


@router.post(
    QE_BASE,
    tags=QE_TAGS,
    summary="Create a qualifying event source (dryRun: validate only, 200)",
    responses=_create_responses(QualifyingEventEnvelope),
)
def create_qualifying_event(body: QualifyingEventCreate) -> tuple[QualifyingEventEnvelope, int]:
    outcome = sources.create_qualifying_event(body)
    message = _message("Qualifying event", "created", outcome)
    return QualifyingEventEnvelope(message=message, data=outcome.data), _created_status(outcome)


@router.get(
    QE_ONE,
    tags=QE_TAGS,
    summary="Read a qualifying event source",
    responses=responses(200, QualifyingEventEnvelope, "The source", 404),
)
def get_qualifying_event(name: str) -> QualifyingEventEnvelope:
    source = sources.get_qualifying_event(_name(name))
    return QualifyingEventEnvelope(message="Qualifying event read successfully.", data=source)


@router.post(
    QE_ONE,
    tags=QE_TAGS,
    summary="Update a qualifying event source (the name cannot change)",
    responses=responses(200, QualifyingEventEnvelope, "Updated", 404, 409),
)
def update_qualifying_event(name: str, body: QualifyingEventUpdate) -> QualifyingEventEnvelope:
    outcome = sources.update_qualifying_event(_name(name), body)
    return QualifyingEventEnvelope(
        message=_message("Qualifying event", "updated", outcome), data=outcome.data
    )


@router.delete(
    QE_ONE,
    tags=QE_TAGS,
    summary="Delete a qualifying event source",
    responses=responses(200, Message, "Deleted", 404, 409),
)
def delete_qualifying_event(name: str) -> Message:
    sources.delete_qualifying_event(_name(name))
    return Message(message="Qualifying event deleted successfully.")


# --- assignment sources -------------------------------------------------------------------------


@router.get(
    AS_BASE,
    tags=AS_TAGS,
    summary="List assignment sources",
    responses=responses(200, AssignmentSourceListEnvelope, "A page of assignment sources"),
)
def list_assignment_sources(query: Annotated[PageQuery, Query()]) -> AssignmentSourceListEnvelope:
    page = sources.list_assignment_sources(query)
    return AssignmentSourceListEnvelope.model_validate(
        paged("Assignment sources listed successfully.", page, router)
    )


@router.post(
    AS_BASE,
    tags=AS_TAGS,
    summary="Create an assignment source (dryRun: validate only, 200)",
    responses=_create_responses(AssignmentSourceEnvelope),
)
def create_assignment_source(body: AssignmentSourceCreate) -> tuple[AssignmentSourceEnvelope, int]:
    outcome = sources.create_assignment_source(body)
    message = _message("Assignment source", "created", outcome)
    return AssignmentSourceEnvelope(message=message, data=outcome.data), _created_status(outcome)


@router.get(
    AS_ONE,
    tags=AS_TAGS,
    summary="Read an assignment source",
    responses=responses(200, AssignmentSourceEnvelope, "The source", 404),
)
def get_assignment_source(name: str) -> AssignmentSourceEnvelope:
    source = sources.get_assignment_source(_name(name))
    return AssignmentSourceEnvelope(message="Assignment source read successfully.", data=source)


@router.post(
    AS_ONE,
    tags=AS_TAGS,
    summary="Fully update an assignment source (renaming is refused)",
    responses=responses(200, AssignmentSourceEnvelope, "Updated", 404, 409),
)
def update_assignment_source(name: str, body: AssignmentSourceUpdate) -> AssignmentSourceEnvelope:
    outcome = sources.update_assignment_source(_name(name), body)
    return AssignmentSourceEnvelope(
        message=_message("Assignment source", "updated", outcome), data=outcome.data
    )


@router.patch(
    AS_ONE,
    tags=AS_TAGS,
    summary="Partially update an assignment source (renaming is refused)",
    responses=responses(200, AssignmentSourceEnvelope, "Updated", 404, 409),
)
def patch_assignment_source(name: str, body: AssignmentSourcePatch) -> AssignmentSourceEnvelope:
    outcome = sources.patch_assignment_source(_name(name), body)
    return AssignmentSourceEnvelope(
        message=_message("Assignment source", "updated", outcome), data=outcome.data
    )


@router.delete(
    AS_ONE,
    tags=AS_TAGS,
    summary="Delete an assignment source (409 while an experiment uses it)",
    responses=responses(200, Message, "Deleted", 404, 409),
)
def delete_assignment_source(name: str) -> Message:
    sources.delete_assignment_source(_name(name))
    return Message(message="Assignment source deleted successfully.")


app, lambda_handler = build(router, key_kind="console")
