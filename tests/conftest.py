"""Shared fixtures: an in-memory AWS (moto) with the table and bucket, and a handler caller."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The keys every moto store holds (registered by moto_store), by kind; http_event presents them.
TEST_KEYS = {
    "console": "console-key-of-the-test-store-0123456789",
    "server": "secret-key-of-the-test-store-0123456789",
}
UNKNOWN_KEY = "console-no-such-key-in-the-test-store-00"


def register_test_keys() -> None:
    """Store TEST_KEYS in the table in use (as `expconsole keys create --key` would), so requests
    built by http_event pass the functions' key check."""
    from expconsole.services import keys

    for kind, plain in TEST_KEYS.items():
        keys.create_key(kind, "tests", key=plain)


@contextmanager
def moto_store() -> Iterator[None]:
    """moto's in-memory AWS with our table created, and fresh boto3 clients around it."""
    from moto import mock_aws

    from expconsole import aws as aws_clients
    from expconsole.services import keys
    from expconsole.store import dynamo

    with pytest.MonkeyPatch.context() as patch:
        for name, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "TABLE_NAME": "expconsole-test",
            "EVENTS_BUCKET": "expconsole-test-events",
        }.items():
            patch.setenv(name, value)
        patch.delenv("AWS_ENDPOINT_URL", raising=False)
        aws_clients.reset()
        keys.reset_cache()  # a new store is a new deployment: no sandbox has looked a key up yet
        try:
            with mock_aws():
                dynamo.create_table()
                register_test_keys()
                yield
        finally:
            aws_clients.reset()
            keys.reset_cache()


@pytest.fixture
def aws() -> Iterator[None]:
    """A fresh moto store for one test."""
    with moto_store():
        yield


def load_function(name: str) -> Any:
    """Import functions/<name>/app.py under a unique module name (every function has an app.py)."""
    module_name = f"expconsole_test_fn_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, ROOT / "functions" / name / "app.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def http_event(
    method: str,
    path: str,
    body: Any = None,
    *,
    query: str = "",
    key_kind: str | None = "console",
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload 2.0) event, presenting the test store's key of `key_kind`
    ("console" or "server"), a key no store holds ("unknown"), or none (None)."""
    params: dict[str, str] = {}
    for k, v in parse_qsl(query, keep_blank_values=True):
        params[k] = f"{params[k]},{v}" if k in params else v
    all_headers = {"content-type": "application/json", "host": "localhost:3000", "x-forwarded-proto": "http"}
    if key_kind is not None:
        all_headers["service-api-key"] = UNKNOWN_KEY if key_kind == "unknown" else TEST_KEYS[key_kind]
    all_headers.update(headers or {})
    context: dict[str, Any] = {
        "accountId": "123456789012",
        "apiId": "local",
        "domainName": "localhost",
        "http": {
            "method": method,
            "path": path,
            "protocol": "HTTP/1.1",
            "sourceIp": "127.0.0.1",
            "userAgent": "t",
        },
        "requestId": "req",
        "routeKey": "$default",
        "stage": "$default",
        "time": "01/Jan/2026:00:00:00 +0000",
        "timeEpoch": 0,
    }
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "queryStringParameters": params or None,
        "headers": all_headers,
        "requestContext": context,
        "body": body if isinstance(body, str) or body is None else json.dumps(body),
        "isBase64Encoded": False,
    }


class LambdaContext:
    """The attributes of Lambda's context object that handlers and Powertools read."""

    function_name = "expconsole-test"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:expconsole-test"
    aws_request_id = "00000000-0000-0000-0000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


LAMBDA_CONTEXT = LambdaContext()


class Caller:
    """Calls one function's lambda_handler with HTTP-like arguments; returns (status, json)."""

    def __init__(self, function: str) -> None:
        self.module = load_function(function)

    def __call__(self, method: str, path: str, body: Any = None, **kwargs: Any) -> tuple[int, Any]:
        response = self.module.lambda_handler(http_event(method, path, body, **kwargs), LAMBDA_CONTEXT)
        return response["statusCode"], json.loads(response["body"])


@pytest.fixture
def gates_fn(aws: None) -> Caller:
    return Caller("gates")


# Collected first, so that under xdist (`-n`) they start first: the built stack (a `make build`
# of a minute or more behind a lock, then its server), then the longest end-to-end modules. xdist's
# default scheduler hands each worker a run of consecutive items, so each of these modules stays
# on one worker (the stack's lock never holds the other one), and the many short tests that come
# after keep both workers busy to the end rather than a long test starting last. (--dist loadgroup
# would group modules explicitly, but it keys work by node id, and Schemathesis gives all of the
# fuzz test's items one node id: only one of them would run.)
FIRST = (
    "tests/stack/",
    "tests/e2e/test_sdk_protocol.py",
    "tests/e2e/test_web_console.py",
    "tests/e2e/test_aws_paths.py",
    "tests/e2e/test_load_bench.py",
    "tests/e2e/test_sdk_pulse.py",
    "tests/e2e/test_first_hour.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the FIRST modules first, in that order; everything else keeps its order."""

    def rank(item: pytest.Item) -> int:
        return next((i for i, prefix in enumerate(FIRST) if item.nodeid.startswith(prefix)), len(FIRST))

    items.sort(key=rank)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print what tests recorded for the reader (tests/stack: every function's size), pass or fail."""
    for report in terminalreporter.getreports("passed") + terminalreporter.getreports("failed"):
        for name, value in getattr(report, "user_properties", []):
            if name in ("function sizes", "core layer"):
                terminalreporter.write_sep("-", f"{name} ({report.nodeid})")
                terminalreporter.write_line(str(value))
