"""Pulse results: /console/v1/experiments/{id}/pulse_results and /console/v1/holdouts/{id}/pulse_results.

The only API function with the numeric layer (numpy, scipy). Parse, call the service, wrap.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Query

from expconsole.api.app import build, new_router
from expconsole.api.docs import responses
from expconsole.api.envelope import ok
from expconsole.models.results import (
    ExperimentResultsEnvelope,
    ExperimentResultSeriesEnvelope,
    ExperimentResultsQuery,
    ExperimentResultsSeriesQuery,
    HoldoutResultsEnvelope,
    HoldoutResultsQuery,
)
from expconsole.services import results

router = new_router()


@router.get(
    "/console/v1/experiments/<id>/pulse_results",
    tags=["Experiments"],
    summary="Pulse results of one test group against control (beta)",
    responses=responses(200, ExperimentResultsEnvelope, "Results of the day", 404),
)
def experiment_pulse_results(id: str, query: Annotated[ExperimentResultsQuery, Query()]) -> dict[str, Any]:
    return ok(*results.experiment_results(id, query))


@router.get(
    "/console/v1/experiments/<id>/pulse_results/days",
    tags=["Experiments"],
    summary="Pulse results of every computed day (the effect over time), one test group against control",
    responses=responses(200, ExperimentResultSeriesEnvelope, "Each metric's figures per result day", 404),
)
def experiment_pulse_results_days(
    id: str, query: Annotated[ExperimentResultsSeriesQuery, Query()]
) -> dict[str, Any]:
    return ok(*results.experiment_results_series(id, query))


@router.get(
    "/console/v1/holdouts/<id>/pulse_results",
    tags=["Holdouts"],
    summary="Pulse results of a holdout's monitoring metrics",
    responses=responses(200, HoldoutResultsEnvelope, "Results of the latest day", 404),
)
def holdout_pulse_results(id: str, query: Annotated[HoldoutResultsQuery, Query()]) -> dict[str, Any]:
    return ok(*results.holdout_results(id, query))


app, lambda_handler = build(router, key_kind="console")
