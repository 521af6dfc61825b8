"""Logged events catalogue: /console/v1/events. Parse, call the service, wrap in the envelope."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler.openapi.params import Query

from expconsole.api.app import build, new_router
from expconsole.api.docs import responses
from expconsole.api.envelope import ok, paged
from expconsole.api.pagination import PageQuery
from expconsole.models.events import EventListQuery, EventSummaryEnvelope, LoggedEventListEnvelope
from expconsole.models.list_envelopes import AnyListEnvelope
from expconsole.services import events

router = new_router()
BASE = "/console/v1/events"
ONE = f"{BASE}/<eventName>"
TAGS = ["Events"]


def _name(raw: str) -> str:
    """The event name as sent, URL-decoded once, as API Gateway passes path parameters."""
    decoded = (router.current_event.path_parameters or {}).get("eventName")
    return events.check_name(decoded if decoded is not None else unquote(raw))


@router.get(
    BASE,
    tags=TAGS,
    summary="List logged events, newest first (last 7 days by default)",
    responses=responses(200, LoggedEventListEnvelope, "A page of logged events"),
)
def list_events(query: Annotated[EventListQuery, Query()]) -> dict[str, Any]:
    return paged("Events listed successfully.", events.list_events(query), router)


@router.get(
    ONE,
    tags=TAGS,
    summary="List one event's records, newest first",
    responses=responses(200, LoggedEventListEnvelope, "A page of logged events"),
)
def list_event_records(eventName: str, query: Annotated[EventListQuery, Query()]) -> dict[str, Any]:
    return paged("Events listed successfully.", events.list_event_records(_name(eventName), query), router)


@router.get(
    f"{ONE}/summary",
    tags=TAGS,
    summary="Daily counts, first and last seen, metadata keys of one event",
    responses=responses(200, EventSummaryEnvelope, "The summary", 404),
)
def event_summary(eventName: str) -> dict[str, Any]:
    return ok("Event summary read successfully.", events.summary(_name(eventName)))


@router.get(
    f"{ONE}/metrics",
    tags=TAGS,
    summary="Metrics built on an event (built-ins and stored metrics naming it)",
    responses=responses(200, AnyListEnvelope, "A page of metrics"),
)
def event_metrics(eventName: str, query: Annotated[PageQuery, Query()]) -> dict[str, Any]:
    return paged(
        "Metrics listed successfully.", events.metrics_on(_name(eventName), query.page, query.limit), router
    )


app, lambda_handler = build(router, key_kind="console")
