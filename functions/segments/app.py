"""Segments: /console/v1/segments. Parse, call the service, wrap in the envelope."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from expconsole.api.app import build, new_router
from expconsole.api.docs import responses
from expconsole.api.envelope import paged
from expconsole.api.pagination import PageQuery, link_base, pagination_of
from expconsole.models.common import ArchiveBody, Message
from expconsole.models.segments import (
    IdListEnvelope,
    SegmentCreate,
    SegmentEnvelope,
    SegmentIds,
    SegmentListEnvelope,
    SegmentListQuery,
    SegmentRules,
)
from expconsole.services import segments

router = new_router()
BASE = "/console/v1/segments"
ONE = f"{BASE}/<id>"
TAGS = ["Segments"]


@router.get(
    BASE,
    tags=TAGS,
    summary="List segments",
    responses=responses(200, SegmentListEnvelope, "A page of segments"),
)
def list_segments(query: Annotated[SegmentListQuery, Query()]) -> SegmentListEnvelope:
    page = segments.list_segments(query)
    return SegmentListEnvelope.model_validate(paged("Segments listed successfully.", page, router))


@router.post(
    BASE, tags=TAGS, summary="Create a segment", responses=responses(201, SegmentEnvelope, "Created", 409)
)
def create_segment(body: SegmentCreate) -> tuple[SegmentEnvelope, int]:
    return SegmentEnvelope(message="Segment created successfully.", data=segments.create(body)), 201


@router.get(
    ONE, tags=TAGS, summary="Read a segment", responses=responses(200, SegmentEnvelope, "The segment", 404)
)
def get_segment(id: str) -> SegmentEnvelope:
    return SegmentEnvelope(message="Segment read successfully.", data=segments.get(id))


@router.delete(
    ONE,
    tags=TAGS,
    summary="Delete a segment no condition names (its ids too)",
    responses=responses(200, Message, "Deleted", 404, 409),
)
def delete_segment(id: str) -> Message:
    segments.delete(id)
    return Message(message="Segment deleted successfully.")


@router.put(
    f"{ONE}/archive",
    tags=TAGS,
    summary="Archive a segment",
    responses=responses(200, SegmentEnvelope, "Archived", 404, 409),
)
def archive_segment(id: str, body: ArchiveBody | None = None) -> SegmentEnvelope:
    body = body or ArchiveBody()
    archived = segments.archive(id, body.forceArchive, body.archiveReason)
    return SegmentEnvelope(message="Segment archived successfully.", data=archived)


@router.post(
    f"{ONE}/conditional",
    tags=TAGS,
    summary="Set a rule_based segment's rules (an array of rules)",
    responses=responses(200, SegmentEnvelope, "Rules set", 404, 409),
)
def set_rules(id: str, body: SegmentRules) -> SegmentEnvelope:
    return SegmentEnvelope(
        message="Segment rules updated successfully.", data=segments.set_rules(id, body.root)
    )


@router.get(
    f"{ONE}/id_list",
    tags=TAGS,
    summary="Read an id_list segment's ids, a page at a time",
    responses=responses(200, IdListEnvelope, "A page of ids", 404),
)
def get_ids(id: str, query: Annotated[PageQuery, Query()]) -> IdListEnvelope:
    data, page = segments.get_ids(id, query.page, query.limit)
    pagination = pagination_of(page, *link_base(router))
    return IdListEnvelope.model_validate(
        {"message": "Segment ids read successfully.", "data": data, "pagination": pagination}
    )


@router.patch(
    f"{ONE}/id_list",
    tags=TAGS,
    summary="Add 1 to 1000 ids to an id_list segment",
    responses=responses(200, SegmentEnvelope, "Ids added", 404, 409),
)
def add_ids(id: str, body: SegmentIds) -> SegmentEnvelope:
    return SegmentEnvelope(
        message="IDs successfully added to Segment ID List.", data=segments.add_ids(id, body.ids)
    )


@router.delete(
    f"{ONE}/id_list",
    tags=TAGS,
    summary="Remove 1 to 1000 ids from an id_list segment",
    responses=responses(200, SegmentEnvelope, "Ids removed", 404, 409),
)
def remove_ids(id: str, body: SegmentIds) -> SegmentEnvelope:
    removed = segments.remove_ids(id, body.ids)
    return SegmentEnvelope(message="IDs successfully removed from Segment ID List.", data=removed)


app, lambda_handler = build(router, key_kind="console")
