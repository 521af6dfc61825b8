"""Experiments: /console/v1/experiments. Parse, call the service, wrap in the envelope."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from expconsole.api.app import build, new_router
from expconsole.api.docs import responses
from expconsole.api.envelope import paged
from expconsole.api.pagination import PageQuery
from expconsole.lazy import lazy_import
from expconsole.models.common import EventWarning, Message, UnarchiveBody
from expconsole.models.experiments import (
    Experiment,
    ExperimentEnvelope,
    ExperimentListEnvelope,
    ExperimentListQuery,
)
from expconsole.services import event_names, experiments

if TYPE_CHECKING:
    from expconsole.models import experiments_requests as requests
else:
    # The request bodies are created by the first request that sends one, not at import: a cold
    # start serving a read never needs them (models/experiments_requests.py).
    requests = lazy_import("expconsole.models.experiments_requests")


router = new_router()
BASE = "/console/v1/experiments"
ONE = f"{BASE}/<id>"
TAGS = ["Experiments"]


def _answer(message: str, experiment: Experiment) -> ExperimentEnvelope:
    return ExperimentEnvelope(message=message, data=experiment)


def _warned(message: str, experiment: Experiment) -> ExperimentEnvelope:
    """An answer to a change that may name metrics: warn of those on events never logged."""
    metrics = {"primaryMetrics": experiment.primaryMetrics, "secondaryMetrics": experiment.secondaryMetrics}
    warnings = [EventWarning.model_validate(w) for w in event_names.experiment_warnings(metrics)]
    return ExperimentEnvelope(message=message, data=experiment, warnings=warnings)


@router.post(
    BASE,
    tags=TAGS,
    summary="Create an experiment",
    responses=responses(201, ExperimentEnvelope, "Created", 409),
)
def create_experiment(body: requests.ExperimentCreate) -> tuple[ExperimentEnvelope, int]:
    return _warned("Experiment created successfully.", experiments.create(body)), 201


@router.get(
    BASE,
    tags=TAGS,
    summary="List experiments",
    responses=responses(200, ExperimentListEnvelope, "A page of experiments"),
)
def list_experiments(query: Annotated[ExperimentListQuery, Query()]) -> ExperimentListEnvelope:
    page = experiments.list_experiments(query)
    return ExperimentListEnvelope.model_validate(paged("Experiments listed successfully.", page, router))


@router.get(
    ONE,
    tags=TAGS,
    summary="Read an experiment",
    responses=responses(200, ExperimentEnvelope, "The experiment", 404),
)
def get_experiment(id: str) -> ExperimentEnvelope:
    return _answer("Experiment read successfully.", experiments.get(id))


@router.post(
    ONE,
    tags=TAGS,
    summary="Fully update an experiment",
    responses=responses(200, ExperimentEnvelope, "Updated", 404, 409),
)
def update_experiment(id: str, body: requests.ExperimentUpdate) -> ExperimentEnvelope:
    return _warned("Experiment updated successfully.", experiments.full_update(id, body))


@router.patch(
    ONE,
    tags=TAGS,
    summary="Partially update an experiment",
    responses=responses(200, ExperimentEnvelope, "Updated", 404, 409),
)
def patch_experiment(id: str, body: requests.ExperimentPatch) -> ExperimentEnvelope:
    experiment = experiments.patch(id, body)
    if {"primaryMetrics", "secondaryMetrics"} & body.model_fields_set:
        return _warned("Experiment updated successfully.", experiment)
    return _answer("Experiment updated successfully.", experiment)


@router.delete(
    ONE, tags=TAGS, summary="Delete an experiment", responses=responses(200, Message, "Deleted", 404, 409)
)
def delete_experiment(id: str) -> Message:
    experiments.delete(id)
    return Message(message="Experiment deleted successfully.")


@router.get(
    f"{ONE}/versions",
    tags=TAGS,
    summary="List an experiment's versions, newest first",
    responses=responses(200, ExperimentListEnvelope, "Versions", 404),
)
def list_experiment_versions(id: str, query: Annotated[PageQuery, Query()]) -> ExperimentListEnvelope:
    page = experiments.versions(id, query.page, query.limit)
    message = "Experiment versions listed successfully."
    return ExperimentListEnvelope.model_validate(paged(message, page, router))


@router.put(
    f"{ONE}/start",
    tags=TAGS,
    summary="Start an experiment (setup to active)",
    responses=responses(200, ExperimentEnvelope, "Started", 404, 409),
)
def start_experiment(id: str, body: requests.ExperimentStartBody | None = None) -> ExperimentEnvelope:
    return _answer(
        "Experiment successfully started.", experiments.start(id, body or requests.ExperimentStartBody())
    )


@router.put(
    f"{ONE}/make_decision",
    tags=TAGS,
    summary="Launch a group and finish the experiment (active to decision_made)",
    responses=responses(200, ExperimentEnvelope, "Decision made", 404, 409),
)
def make_experiment_decision(id: str, body: requests.MakeDecisionBody) -> ExperimentEnvelope:
    return _answer("Decision made for Experiment.", experiments.make_decision(id, body))


@router.put(
    f"{ONE}/abandon",
    tags=TAGS,
    summary="Abandon an experiment (active to abandoned)",
    responses=responses(200, ExperimentEnvelope, "Abandoned", 404, 409),
)
def abandon_experiment(id: str, body: requests.AbandonBody) -> ExperimentEnvelope:
    return _answer("Experiment successfully abandoned.", experiments.abandon(id, body))


@router.put(
    f"{ONE}/reset",
    tags=TAGS,
    summary="Reset a started experiment back to setup",
    responses=responses(200, ExperimentEnvelope, "Reset", 404, 409),
)
def reset_experiment(id: str) -> ExperimentEnvelope:
    return _answer("Experiment successfully reset.", experiments.reset(id))


@router.put(
    f"{ONE}/archive",
    tags=TAGS,
    summary="Archive an experiment",
    responses=responses(200, ExperimentEnvelope, "Archived", 404, 409),
)
def archive_experiment(id: str, body: requests.ExperimentArchiveBody | None = None) -> ExperimentEnvelope:
    body = body or requests.ExperimentArchiveBody()
    return _answer("Experiment successfully archived.", experiments.archive(id, body.archiveReason))


@router.put(
    f"{ONE}/unarchive",
    tags=TAGS,
    summary="Unarchive an experiment (back to the state it was archived from)",
    responses=responses(200, ExperimentEnvelope, "Unarchived", 404, 409),
)
def unarchive_experiment(id: str, body: UnarchiveBody | None = None) -> ExperimentEnvelope:
    return _answer("Experiment successfully unarchived.", experiments.unarchive(id))


@router.post(
    f"{ONE}/restart_as_new",
    tags=TAGS,
    summary="Copy a started experiment's design into a new experiment in setup",
    responses=responses(201, ExperimentEnvelope, "The new experiment", 404, 409),
)
def restart_experiment_as_new(id: str, body: requests.RestartAsNewBody) -> tuple[ExperimentEnvelope, int]:
    experiment = experiments.restart_as_new(id, body.name)
    return _answer("Experiment restarted as a new experiment.", experiment), 201


@router.post(
    f"{ONE}/schedule_start",
    tags=TAGS,
    summary="Schedule an experiment in setup to start at a future time",
    responses=responses(200, ExperimentEnvelope, "Scheduled", 404, 409),
)
def schedule_experiment_start(id: str, body: requests.ScheduleStartBody) -> ExperimentEnvelope:
    experiment = experiments.schedule_start(id, body.scheduledTime)
    return _answer("Successfully scheduled experiment start.", experiment)


@router.post(
    f"{ONE}/disable_groups",
    tags=TAGS,
    summary="Disable groups by name",
    responses=responses(200, ExperimentEnvelope, "Groups disabled", 404, 409),
)
def disable_experiment_groups(id: str, body: requests.GroupNamesBody) -> ExperimentEnvelope:
    experiment = experiments.disable_groups(id, body.group_names)
    return _answer("Experiment groups disabled successfully.", experiment)


@router.post(
    f"{ONE}/enable_groups",
    tags=TAGS,
    summary="Enable groups by name",
    responses=responses(200, ExperimentEnvelope, "Groups enabled", 404, 409),
)
def enable_experiment_groups(id: str, body: requests.GroupNamesBody) -> ExperimentEnvelope:
    return _answer("Experiment groups enabled successfully.", experiments.enable_groups(id, body.group_names))


app, lambda_handler = build(router, key_kind="console")
