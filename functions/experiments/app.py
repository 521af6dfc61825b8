"""Experiments: /console/v1/experiments. Parse, call the service, wrap in the envelope."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from expconsole.api.app import build
from expconsole.api.docs import responses
from expconsole.api.envelope import ok, paged, warned
from expconsole.api.pagination import PageQuery
from expconsole.models.common import Message, UnarchiveBody
from expconsole.models.experiments import (
    AbandonBody,
    ExperimentArchiveBody,
    ExperimentCreate,
    ExperimentEnvelope,
    ExperimentListEnvelope,
    ExperimentListQuery,
    ExperimentPatch,
    ExperimentStartBody,
    ExperimentUpdate,
    GroupNamesBody,
    MakeDecisionBody,
    RestartAsNewBody,
    ScheduleStartBody,
)
from expconsole.services import event_names, experiments

router = APIGatewayHttpRouter()
BASE = "/console/v1/experiments"
ONE = f"{BASE}/<id>"
TAGS = ["Experiments"]


def _updated(experiment: dict[str, Any]) -> dict[str, Any]:
    return ok("Experiment updated successfully.", experiment)


def _warned(experiment: dict[str, Any]) -> dict[str, Any]:
    """An update that may change the metrics: warn of those on events never logged."""
    warnings = event_names.experiment_warnings(experiment)
    return warned("Experiment updated successfully.", experiment, warnings)


@router.post(
    BASE,
    tags=TAGS,
    summary="Create an experiment",
    responses=responses(201, ExperimentEnvelope, "Created", 409),
)
def create_experiment(body: ExperimentCreate) -> tuple[dict[str, Any], int]:
    experiment = experiments.create(body)
    warnings = event_names.experiment_warnings(experiment)
    return warned("Experiment created successfully.", experiment, warnings), 201


@router.get(
    BASE,
    tags=TAGS,
    summary="List experiments",
    responses=responses(200, ExperimentListEnvelope, "A page of experiments"),
)
def list_experiments(query: Annotated[ExperimentListQuery, Query()]) -> dict[str, Any]:
    return paged("Experiments listed successfully.", experiments.list_experiments(query), router)


@router.get(
    ONE,
    tags=TAGS,
    summary="Read an experiment",
    responses=responses(200, ExperimentEnvelope, "The experiment", 404),
)
def get_experiment(id: str) -> dict[str, Any]:
    return ok("Experiment read successfully.", experiments.get(id))


@router.post(
    ONE,
    tags=TAGS,
    summary="Fully update an experiment",
    responses=responses(200, ExperimentEnvelope, "Updated", 404, 409),
)
def update_experiment(id: str, body: ExperimentUpdate) -> dict[str, Any]:
    return _warned(experiments.full_update(id, body))


@router.patch(
    ONE,
    tags=TAGS,
    summary="Partially update an experiment",
    responses=responses(200, ExperimentEnvelope, "Updated", 404, 409),
)
def patch_experiment(id: str, body: ExperimentPatch) -> dict[str, Any]:
    experiment = experiments.patch(id, body)
    if {"primaryMetrics", "secondaryMetrics"} & body.model_fields_set:
        return _warned(experiment)
    return _updated(experiment)


@router.delete(
    ONE, tags=TAGS, summary="Delete an experiment", responses=responses(200, Message, "Deleted", 404, 409)
)
def delete_experiment(id: str) -> dict[str, Any]:
    experiments.delete(id)
    return {"message": "Experiment deleted successfully."}


@router.get(
    f"{ONE}/versions",
    tags=TAGS,
    summary="List an experiment's versions, newest first",
    responses=responses(200, ExperimentListEnvelope, "Versions", 404),
)
def list_experiment_versions(id: str, query: Annotated[PageQuery, Query()]) -> dict[str, Any]:
    return paged(
        "Experiment versions listed successfully.", experiments.versions(id, query.page, query.limit), router
    )


@router.put(
    f"{ONE}/start",
    tags=TAGS,
    summary="Start an experiment (setup to active)",
    responses=responses(200, ExperimentEnvelope, "Started", 404, 409),
)
def start_experiment(id: str, body: ExperimentStartBody | None = None) -> dict[str, Any]:
    return ok("Experiment successfully started.", experiments.start(id, body or ExperimentStartBody()))


@router.put(
    f"{ONE}/make_decision",
    tags=TAGS,
    summary="Launch a group and finish the experiment (active to decision_made)",
    responses=responses(200, ExperimentEnvelope, "Decision made", 404, 409),
)
def make_experiment_decision(id: str, body: MakeDecisionBody) -> dict[str, Any]:
    return ok("Decision made for Experiment.", experiments.make_decision(id, body))


@router.put(
    f"{ONE}/abandon",
    tags=TAGS,
    summary="Abandon an experiment (active to abandoned)",
    responses=responses(200, ExperimentEnvelope, "Abandoned", 404, 409),
)
def abandon_experiment(id: str, body: AbandonBody) -> dict[str, Any]:
    return ok("Experiment successfully abandoned.", experiments.abandon(id, body))


@router.put(
    f"{ONE}/reset",
    tags=TAGS,
    summary="Reset a started experiment back to setup",
    responses=responses(200, ExperimentEnvelope, "Reset", 404, 409),
)
def reset_experiment(id: str) -> dict[str, Any]:
    return ok("Experiment successfully reset.", experiments.reset(id))


@router.put(
    f"{ONE}/archive",
    tags=TAGS,
    summary="Archive an experiment",
    responses=responses(200, ExperimentEnvelope, "Archived", 404, 409),
)
def archive_experiment(id: str, body: ExperimentArchiveBody | None = None) -> dict[str, Any]:
    body = body or ExperimentArchiveBody()
    return ok("Experiment successfully archived.", experiments.archive(id, body.archiveReason))


@router.put(
    f"{ONE}/unarchive",
    tags=TAGS,
    summary="Unarchive an experiment (back to the state it was archived from)",
    responses=responses(200, ExperimentEnvelope, "Unarchived", 404, 409),
)
def unarchive_experiment(id: str, body: UnarchiveBody | None = None) -> dict[str, Any]:
    return ok("Experiment successfully unarchived.", experiments.unarchive(id))


@router.post(
    f"{ONE}/restart_as_new",
    tags=TAGS,
    summary="Copy a started experiment's design into a new experiment in setup",
    responses=responses(201, ExperimentEnvelope, "The new experiment", 404, 409),
)
def restart_experiment_as_new(id: str, body: RestartAsNewBody) -> tuple[dict[str, Any], int]:
    return ok("Experiment restarted as a new experiment.", experiments.restart_as_new(id, body.name)), 201


@router.post(
    f"{ONE}/schedule_start",
    tags=TAGS,
    summary="Schedule an experiment in setup to start at a future time",
    responses=responses(200, ExperimentEnvelope, "Scheduled", 404, 409),
)
def schedule_experiment_start(id: str, body: ScheduleStartBody) -> dict[str, Any]:
    return ok("Successfully scheduled experiment start.", experiments.schedule_start(id, body.scheduledTime))


@router.post(
    f"{ONE}/disable_groups",
    tags=TAGS,
    summary="Disable groups by name",
    responses=responses(200, ExperimentEnvelope, "Groups disabled", 404, 409),
)
def disable_experiment_groups(id: str, body: GroupNamesBody) -> dict[str, Any]:
    return ok("Experiment groups disabled successfully.", experiments.disable_groups(id, body.group_names))


@router.post(
    f"{ONE}/enable_groups",
    tags=TAGS,
    summary="Enable groups by name",
    responses=responses(200, ExperimentEnvelope, "Groups enabled", 404, 409),
)
def enable_experiment_groups(id: str, body: GroupNamesBody) -> dict[str, Any]:
    return ok("Experiment groups enabled successfully.", experiments.enable_groups(id, body.group_names))


app, lambda_handler = build(router, key_kind="console")
