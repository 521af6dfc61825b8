"""Metrics: /console/v1/metrics. Parse, call the service, wrap in the envelope."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import unquote

from aws_lambda_powertools.event_handler.openapi.params import Query

from expconsole.api.app import build, new_router
from expconsole.api.docs import responses
from expconsole.api.envelope import paged
from expconsole.api.pagination import PageQuery
from expconsole.models.common import Message
from expconsole.models.list_envelopes import AnyListEnvelope
from expconsole.models.metrics import (
    Metric,
    MetricCreate,
    MetricEnvelope,
    MetricExperimentsQuery,
    MetricListEnvelope,
    MetricListQuery,
    MetricUpdate,
)
from expconsole.services import event_names, metrics

router = new_router()
BASE = "/console/v1/metrics"
ONE = f"{BASE}/<id>"
TAGS = ["Metrics"]


def _metric_id(raw: str) -> str:
    """The id as sent, URL-decoded once (`name%3A%3Asum` → `name::sum`), as API Gateway passes it."""
    decoded = (router.current_event.path_parameters or {}).get("id")
    return decoded if decoded is not None else unquote(raw)


@router.post(
    BASE,
    tags=TAGS,
    summary="Create a metric (dryRun: validate only)",
    responses={
        **responses(201, MetricEnvelope, "Created", 409),
        200: {
            "description": "dryRun: the metric is valid; nothing was stored",
            "content": {"application/json": {"model": MetricEnvelope}},
        },
    },
)
def create_metric(body: MetricCreate) -> tuple[MetricEnvelope, int]:
    metric = metrics.create(body)
    if body.dryRun:
        return _warned("Metric validated successfully (dry run: nothing was stored).", metric), 200
    return _warned("Metric created successfully.", metric), 201


def _warned(message: str, metric: Metric) -> MetricEnvelope:
    """The metric with a warning for each event it names that was never logged."""
    warnings = event_names.metric_warnings(metric.model_dump(mode="json"))
    return MetricEnvelope.model_validate({"message": message, "data": metric, "warnings": warnings})


def _answer(message: str, metric: Metric) -> MetricEnvelope:
    return MetricEnvelope(message=message, data=metric)


def _list(query: MetricListQuery) -> MetricListEnvelope:
    page = metrics.list_metrics(query)
    return MetricListEnvelope.model_validate(paged("Metrics listed successfully.", page, router))


@router.get(
    BASE, tags=TAGS, summary="List metrics", responses=responses(200, MetricListEnvelope, "A page of metrics")
)
def list_metrics(query: Annotated[MetricListQuery, Query()]) -> MetricListEnvelope:
    return _list(query)


@router.get(
    f"{BASE}/list",
    tags=TAGS,
    summary="List metrics (the peer's path)",
    responses=responses(200, MetricListEnvelope, "A page of metrics"),
)
def list_metrics_alias(query: Annotated[MetricListQuery, Query()]) -> MetricListEnvelope:
    return _list(query)


@router.get(
    ONE,
    tags=TAGS,
    summary="Read a metric by id (`<name>::<type>`; built-ins included)",
    responses=responses(200, MetricEnvelope, "The metric", 404),
)
def get_metric(id: str) -> MetricEnvelope:
    return _answer("Metric read successfully.", metrics.get(_metric_id(id)))


@router.post(
    ONE,
    tags=TAGS,
    summary="Update a metric (name and type cannot change)",
    responses=responses(200, MetricEnvelope, "Updated", 404, 409),
)
def update_metric(id: str, body: MetricUpdate) -> MetricEnvelope:
    metric = metrics.update(_metric_id(id), body)
    if body.dryRun:
        return _warned("Metric update validated successfully (dry run: nothing was stored).", metric)
    return _warned("Metric updated successfully.", metric)


@router.delete(
    ONE,
    tags=TAGS,
    summary="Delete a metric no experiment or metric uses",
    responses=responses(200, Message, "Deleted", 404, 409),
)
def delete_metric(id: str) -> Message:
    metrics.delete(_metric_id(id))
    return Message(message="Metric deleted successfully.")


@router.get(
    f"{ONE}/versions",
    tags=TAGS,
    summary="List a metric's versions, newest first",
    responses=responses(200, MetricListEnvelope, "Versions", 404),
)
def list_versions(id: str, query: Annotated[PageQuery, Query()]) -> MetricListEnvelope:
    page = metrics.versions(_metric_id(id), query.page, query.limit)
    return MetricListEnvelope.model_validate(paged("Metric versions listed successfully.", page, router))


@router.put(
    f"{ONE}/schedule_archive",
    tags=TAGS,
    summary="Schedule a metric's archive (takes effect after a grace period)",
    responses=responses(200, MetricEnvelope, "Archive scheduled", 404, 409),
)
def schedule_archive(id: str) -> MetricEnvelope:
    return _answer("Metric archive scheduled successfully.", metrics.schedule_archive(_metric_id(id)))


@router.put(
    f"{ONE}/cancel_archive",
    tags=TAGS,
    summary="Cancel a scheduled archive",
    responses=responses(200, MetricEnvelope, "Archive cancelled", 404, 409),
)
def cancel_archive(id: str) -> MetricEnvelope:
    return _answer("Metric archival cancelled successfully.", metrics.cancel_archive(_metric_id(id)))


@router.put(
    f"{ONE}/unarchive",
    tags=TAGS,
    summary="Unarchive an archived metric",
    responses=responses(200, MetricEnvelope, "Unarchived", 404, 409),
)
def unarchive(id: str) -> MetricEnvelope:
    return _answer("Metric unarchived successfully.", metrics.unarchive(_metric_id(id)))


@router.get(
    f"{ONE}/experiments",
    tags=TAGS,
    summary="Experiments that use a metric",
    responses=responses(200, AnyListEnvelope, "Experiments using the metric", 404),
)
def list_experiments(id: str, query: Annotated[MetricExperimentsQuery, Query()]) -> AnyListEnvelope:
    # Imported here: only this route needs the experiment models in the metrics function.
    from expconsole.services import experiments

    page = metrics.list_experiments(_metric_id(id), query, experiments.present)
    return AnyListEnvelope.model_validate(paged("Experiments listed successfully.", page, router))


app, lambda_handler = build(router, key_kind="console")
