"""The pulse pipeline: `load_pulse`, `pulse_load_history`, and the hourly schedule.

Three kinds of invocation reach this function:
- HTTP (API Gateway): `POST /console/v1/{experiments,holdouts}/{id}/load_pulse` queues the load
  (PULSE_INVOKE_ASYNC: this function invokes itself asynchronously, in AWS and in the local
  server alike) and answers 202 at once, or with `?wait=true` runs it and answers 200;
  `GET .../pulse_load_history` lists the loads, newest first, a queued one `running` with its
  `progress`.
- `{"pulse": {...}}`: one queued load (from load_pulse or the schedule).
- `{"compact": {"days": [...]}}`: finished days compacted to Parquet (from the schedule).
- The EventBridge schedule (`detail-type: Scheduled Event`): every running experiment whose
  `scheduledReloadHour`/`scheduledReloadDays` match this hour, and every enabled holdout; then
  the compaction of the finished days they read.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Query

from expconsole import kinds, observability
from expconsole.api.app import build, new_router
from expconsole.api.docs import responses
from expconsole.api.envelope import ok, paged
from expconsole.api.pagination import PageQuery
from expconsole.models.pulse import LoadPulseBody, LoadPulseEnvelope, LoadPulseQuery, PulseLoadListEnvelope
from expconsole.services import pulse_loads

router = new_router()
ONE = "/console/v1/experiments/<id>"


@router.post(
    f"{ONE}/load_pulse",
    tags=["Experiments"],
    summary="Load pulse: compute the experiment's results from its events",
    responses=responses(202, LoadPulseEnvelope, "Queued (200 with ?wait=true: the finished load)", 404),
)
def load_pulse(
    id: str, query: Annotated[LoadPulseQuery, Query()], body: LoadPulseBody | None = None
) -> tuple[dict[str, Any], int]:
    return _answer(pulse_loads.request(id, body or LoadPulseBody(), kinds.EXPERIMENT, query.wait))


def _answer(outcome: tuple[str, dict[str, Any], bool]) -> tuple[dict[str, Any], int]:
    message, record, queued = outcome
    return ok(message, record), 202 if queued else 200


@router.get(
    f"{ONE}/pulse_load_history",
    tags=["Experiments"],
    summary="List the experiment's pulse loads, newest first",
    responses=responses(200, PulseLoadListEnvelope, "A page of loads", 404),
)
def pulse_load_history(id: str, query: Annotated[PageQuery, Query()]) -> dict[str, Any]:
    return paged(
        "Pulse load history listed successfully.", pulse_loads.history(id, query.page, query.limit), router
    )


HOLDOUT = "/console/v1/holdouts/<id>"


@router.post(
    f"{HOLDOUT}/load_pulse",
    tags=["Holdouts"],
    summary="Load pulse: compute the holdout's results from its events",
    responses=responses(202, LoadPulseEnvelope, "Queued (200 with ?wait=true: the finished load)", 404),
)
def load_holdout_pulse(
    id: str, query: Annotated[LoadPulseQuery, Query()], body: LoadPulseBody | None = None
) -> tuple[dict[str, Any], int]:
    return _answer(pulse_loads.request(id, body or LoadPulseBody(), kinds.HOLDOUT, query.wait))


@router.get(
    f"{HOLDOUT}/pulse_load_history",
    tags=["Holdouts"],
    summary="List the holdout's pulse loads, newest first",
    responses=responses(200, PulseLoadListEnvelope, "A page of loads", 404),
)
def holdout_pulse_load_history(id: str, query: Annotated[PageQuery, Query()]) -> dict[str, Any]:
    return paged(
        "Pulse load history listed successfully.",
        pulse_loads.history(id, query.page, query.limit, kinds.HOLDOUT),
        router,
    )


app, http_handler = build(router, key_kind="console", instrumented=False)


def handle(event: dict[str, Any], context: Any) -> Any:
    if "pulse" in event:
        return pulse_loads.run_queued(event["pulse"])
    if "compact" in event:
        return pulse_loads.compact(event["compact"])
    if event.get("detail-type") == "Scheduled Event":
        return pulse_loads.scheduled(event.get("time"))
    return http_handler(event, context)


lambda_handler = observability.instrument(handle)
