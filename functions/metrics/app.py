"""Metrics: /console/v1/metrics. Parse, call the service, wrap in the envelope."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from expconsole.api.app import build
from expconsole.api.docs import responses
from expconsole.api.envelope import ok, paged, warned
from expconsole.api.pagination import PageQuery
from expconsole.models.common import Message
from expconsole.models.list_envelopes import AnyListEnvelope
from expconsole.models.metrics import (
    MetricCreate,
    MetricEnvelope,
    MetricExperimentsQuery,
    MetricListEnvelope,
    MetricListQuery,
    MetricUpdate,
)
from expconsole.services import event_names, metrics

router = APIGatewayHttpRouter()
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
def create_metric(body: MetricCreate) -> tuple[dict[str, Any], int]:
    metric = metrics.create(body)
    warnings = event_names.metric_warnings(metric)
    if body.dryRun:
        return warned("Metric validated successfully (dry run: nothing was stored).", metric, warnings), 200
    return warned("Metric created successfully.", metric, warnings), 201


def _list(query: MetricListQuery) -> dict[str, Any]:
    return paged("Metrics listed successfully.", metrics.list_metrics(query), router)


@router.get(
    BASE, tags=TAGS, summary="List metrics", responses=responses(200, MetricListEnvelope, "A page of metrics")
)
def list_metrics(query: Annotated[MetricListQuery, Query()]) -> dict[str, Any]:
    return _list(query)


@router.get(
    f"{BASE}/list",
    tags=TAGS,
    summary="List metrics (the peer's path)",
    responses=responses(200, MetricListEnvelope, "A page of metrics"),
)
def list_metrics_alias(query: Annotated[MetricListQuery, Query()]) -> dict[str, Any]:
    return _list(query)


@router.get(
    ONE,
    tags=TAGS,
    summary="Read a metric by id (`<name>::<type>`; built-ins included)",
    responses=responses(200, MetricEnvelope, "The metric", 404),
)
def get_metric(id: str) -> dict[str, Any]:
    return ok("Metric read successfully.", metrics.get(_metric_id(id)))


@router.post(
    ONE,
    tags=TAGS,
    summary="Update a metric (name and type cannot change)",
    responses=responses(200, MetricEnvelope, "Updated", 404, 409),
)
def update_metric(id: str, body: MetricUpdate) -> dict[str, Any]:
    metric = metrics.update(_metric_id(id), body)
    warnings = event_names.metric_warnings(metric)
    if body.dryRun:
        return warned("Metric update validated successfully (dry run: nothing was stored).", metric, warnings)
    return warned("Metric updated successfully.", metric, warnings)


@router.delete(
    ONE,
    tags=TAGS,
    summary="Delete a metric no experiment or metric uses",
    responses=responses(200, Message, "Deleted", 404, 409),
)
def delete_metric(id: str) -> dict[str, Any]:
    metrics.delete(_metric_id(id))
    return {"message": "Metric deleted successfully."}


@router.get(
    f"{ONE}/versions",
    tags=TAGS,
    summary="List a metric's versions, newest first",
    responses=responses(200, MetricListEnvelope, "Versions", 404),
)
def list_versions(id: str, query: Annotated[PageQuery, Query()]) -> dict[str, Any]:
    return paged(
        "Metric versions listed successfully.",
        metrics.versions(_metric_id(id), query.page, query.limit),
        router,
    )


@router.put(
    f"{ONE}/schedule_archive",
    tags=TAGS,
    summary="Schedule a metric's archive (takes effect after a grace period)",
    responses=responses(200, MetricEnvelope, "Archive scheduled", 404, 409),
)
def schedule_archive(id: str) -> dict[str, Any]:
    return ok("Metric archive scheduled successfully.", metrics.schedule_archive(_metric_id(id)))


@router.put(
    f"{ONE}/cancel_archive",
    tags=TAGS,
    summary="Cancel a scheduled archive",
    responses=responses(200, MetricEnvelope, "Archive cancelled", 404, 409),
)
def cancel_archive(id: str) -> dict[str, Any]:
    return ok("Metric archival cancelled successfully.", metrics.cancel_archive(_metric_id(id)))


@router.put(
    f"{ONE}/unarchive",
    tags=TAGS,
    summary="Unarchive an archived metric",
    responses=responses(200, MetricEnvelope, "Unarchived", 404, 409),
)
def unarchive(id: str) -> dict[str, Any]:
    return ok("Metric unarchived successfully.", metrics.unarchive(_metric_id(id)))


@router.get(
    f"{ONE}/experiments",
    tags=TAGS,
    summary="Experiments that use a metric",
    responses=responses(200, AnyListEnvelope, "Experiments using the metric", 404),
)
def list_experiments(id: str, query: Annotated[MetricExperimentsQuery, Query()]) -> dict[str, Any]:
    # Imported here: only this route needs the experiment models in the metrics function.
    from expconsole.services import experiments

    page = metrics.list_experiments(_metric_id(id), query, experiments.present)
    return paged("Experiments listed successfully.", page, router)


app, lambda_handler = build(router, key_kind="console")
