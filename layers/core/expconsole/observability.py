"""Logs, traces and metrics of every function, set up in one place.

- Logger: structured JSON (Powertools), the Lambda context's keys on every line and, for API
  requests, the API Gateway request id as the correlation id, so one request's lines are found
  by the id its caller sees (`Apigw-Requestid`). Events and responses are never logged: they
  carry keys (`keys create` answers with one).
- Tracer: X-Ray, patching botocore only (DynamoDB, S3, Lambda and Athena calls become
  subsegments); patching every supported library would import them all at cold start. The
  patch is applied when the first AWS client is created (`expconsole.aws.client`), not at
  import: it imports botocore's client machinery, which a function that never calls AWS (the
  web console's files, the API docs) has no use for, and which the others load at that moment
  anyway. Responses are not captured, for the same reason as above. Off outside Lambda.
- Metrics: CloudWatch embedded metric format, namespace `ExpConsole/<stack>` (the template's
  POWERTOOLS_METRICS_NAMESPACE, so two stacks in one account keep apart), flushed once per
  invocation. What the alarms watch: API
  answers by class (`Requests`, `ClientErrors`, `ServerErrors`), ingestion (`EventsAccepted`,
  `EventsDuplicate`, `EventsSkipped`), pulse runs (`PulseRunDuration`, `PulseRunsFailed`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

__all__ = [
    "MetricUnit",
    "count",
    "count_response",
    "instrument",
    "logger",
    "metrics",
    "trace_aws_calls",
    "tracer",
]

SERVICE = "expconsole"
NAMESPACE = "ExpConsole"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE, auto_patch=False)
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", NAMESPACE), service=SERVICE)

Handler = Callable[[dict[str, Any], Any], Any]


def instrument(handler: Handler, *, http: bool = True, with_metrics: bool = True) -> Handler:
    """The handler with the context on its log lines, a trace segment and its metrics flushed.

    `http`: the events are API Gateway HTTP API requests (their request id correlates the logs).
    `with_metrics`: False for a function whose invocations are not API requests worth counting
    (the static files, the spec builds), where a metrics line per call would only cost log volume."""
    path = correlation_paths.API_GATEWAY_HTTP if http else None
    wrapped = logger.inject_lambda_context(handler, correlation_id_path=path, clear_state=True)
    wrapped = tracer.capture_lambda_handler(wrapped, capture_response=False)
    if not with_metrics:
        return wrapped
    # Powertools prints the ColdStart metric even with metrics disabled (the local server): ask
    # for it only when metrics are on.
    return metrics.log_metrics(wrapped, capture_cold_start_metric=not is_metrics_disabled())


def trace_aws_calls() -> None:
    """Patch botocore so that AWS calls become X-Ray subsegments (idempotent; nothing when off)."""
    tracer.patch(modules=("botocore",))


def count_response(response: Any) -> None:
    """`Requests`, and `ClientErrors` or `ServerErrors` by the answer's status."""
    status = int(response.get("statusCode", 200)) if isinstance(response, dict) else 200
    count("Requests")
    if 400 <= status < 500:
        count("ClientErrors")
    elif status >= 500:
        count("ServerErrors")


def count(name: str, value: float = 1, unit: MetricUnit = MetricUnit.Count) -> None:
    """Add to a metric of this invocation (flushed when the handler returns)."""
    metrics.add_metric(name=name, unit=unit, value=value)
