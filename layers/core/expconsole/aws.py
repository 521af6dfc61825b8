"""Lazily created, cached boto3 clients, and which of their errors mean "storage unavailable".

Creating a client costs tens of milliseconds; doing it at import time would add that to every
cold start, including requests that never touch the service. `AWS_ENDPOINT_URL` (honoured by
botocore) points them at the embedded moto server when running locally.

Retries and time limits. botocore retries throttling, 5xx answers, timeouts and refused
connections itself (standard mode: jittered exponential backoff, 1 s scale when throttled, 25 to
50 ms otherwise, and a retry quota per client). `ATTEMPTS` (the first call and its retries) and
the socket time limits are chosen so that one storage call that keeps failing gives up within
the API functions' 29 s Lambda timeout, and the request answers our own 503 rather than API
Gateway's bare one: at most 4 x (2 s to connect + 4 s per read) plus the backoff. botocore's
defaults (60 s each) would let one hung call outlive the function. Against a local endpoint (the
embedded moto server, which a load benchmark can keep busy for seconds) the defaults stay.
DynamoDB's TransactWriteItems carries a ClientRequestToken that botocore fills in and reuses on
its retries, so a retried transaction whose first attempt was applied (its answer lost) is not
applied twice.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from expconsole.observability import trace_aws_calls

ATTEMPTS = 4
CONNECT_TIMEOUT_S = 2
READ_TIMEOUT_S = 4
_LOCAL_ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3")


@functools.cache
def client(service: str) -> Any:
    import boto3
    from botocore.config import Config

    trace_aws_calls()  # before the first client: its calls are traced in Lambda

    limits: dict[str, Any] = {}
    if not any(os.environ.get(name) for name in _LOCAL_ENDPOINT_VARIABLES):
        limits = {"connect_timeout": CONNECT_TIMEOUT_S, "read_timeout": READ_TIMEOUT_S}
    return boto3.client(
        service,
        config=Config(
            retries={"total_max_attempts": ATTEMPTS, "mode": "standard"}, max_pool_connections=50, **limits
        ),
    )


def reset() -> None:
    """Forget cached clients (tests and the local server switch endpoints)."""
    client.cache_clear()


# Error codes of a request that storage refused for now or failed to serve: retrying later can work.
_TRANSIENT_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "Throttling",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "SlowDown",
        "TransactionInProgressException",
        "RequestTimeout",
        "RequestTimeoutException",
        "InternalServerError",
        "InternalError",
        "ServiceUnavailable",
    }
)
# Reasons a DynamoDB transaction was cancelled as a whole that say nothing about its conditions.
TRANSIENT_CANCELLATIONS = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}
)


def is_transient(exc: BaseException) -> bool:
    """True for a storage error that outlasted botocore's retries but may pass later: throttling,
    a 5xx answer, a transaction cancelled by a conflict or by throttling, a timeout or a failed
    connection. False for everything else (a refused condition, a bad request, missing
    permissions: those are answers, or bugs)."""
    from botocore.exceptions import ClientError, ConnectionError, HTTPClientError, IncompleteReadError

    if isinstance(exc, ConnectionError | HTTPClientError | IncompleteReadError):
        return True
    if not isinstance(exc, ClientError):
        return False
    response = exc.response or {}
    code = response.get("Error", {}).get("Code", "")
    if code in _TRANSIENT_CODES:
        return True
    if code == "TransactionCanceledException":
        reasons = {r.get("Code") for r in response.get("CancellationReasons") or []}
        return bool(reasons & TRANSIENT_CANCELLATIONS) and "ConditionalCheckFailed" not in reasons
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
    return int(status) >= 500


def describe(exc: BaseException) -> str:
    """`<operation>: <code>` of a storage error, for logs (never for responses)."""
    operation = getattr(exc, "operation_name", None) or ""
    code = (getattr(exc, "response", None) or {}).get("Error", {}).get("Code") or type(exc).__name__
    return f"{operation}: {code}" if operation else code
