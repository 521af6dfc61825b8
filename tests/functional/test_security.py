"""Security pass on the handlers (moto): keys never logged, keys stored and compared as hashes,
request size limits, and error bodies that give nothing of the implementation away.

Requests carry real keys where a key matters: `call()` sends the request's SERVICE-API-KEY header
to the function, which resolves it itself, as in AWS.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import logging
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from expconsole import aws as aws_clients
from expconsole.models.events import MAX_BODY_BYTES, MAX_EVENTS
from expconsole.services import gates, keys
from expconsole.store import s3
from tests.conftest import LAMBDA_CONTEXT, TEST_KEYS, http_event, load_function

GATES = "/console/v1/gates"
INGEST = "/v1/webhooks/event_webhook"
EXPCONSOLE = Path(sys.executable).with_name("expconsole")
TABLE_NAME = "expconsole-test"  # the aws fixture's
BUCKET_NAME = "expconsole-test-events"
INTERNAL_DETAIL = "secret internal detail /path/file.py"
GENERIC_500 = "Internal error; the request was not applied. Try again, and report it if it persists."

# What an error body must never show: a stack trace, a file or module, a library, a storage name
# or ARN, a key item's layout, or the class name of an exception.
LEAKS = re.compile(
    r"Traceback|File \"|\.py\b|expconsole\.|botocore|boto3|\bmoto\b|pydantic|powertools|aws_lambda"
    rf"|{re.escape(TABLE_NAME)}|arn:aws|KEY#|GSI1|TYPE#|secret internal detail"
    r"|\b[A-Za-z]+(Error|Exception)\b"
)

# A function of each kind and a list route it serves (every one reads the store).
LIST_ROUTES = [
    ("gates", GATES, ""),
    ("experiments", "/console/v1/experiments", ""),
    ("metrics", "/console/v1/metrics", ""),
    ("dynamic_configs", "/console/v1/dynamic_configs", ""),
    ("holdouts", "/console/v1/holdouts", ""),
    ("layers", "/console/v1/layers", ""),
    ("segments", "/console/v1/segments", ""),
    ("prompts", "/console/v1/prompts", ""),
    ("release_pipelines", "/console/v1/release_pipelines", ""),
    ("warehouse_sources", "/console/v1/experiments/qualifying_events", ""),
    ("events", "/console/v1/events", ""),
    ("results", "/console/v1/experiments/exp/pulse_results", "control=a&test=b"),
    ("pulse", "/console/v1/experiments/exp/pulse_load_history", ""),
]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def now_ms() -> int:
    return int(time.time() * 1000)


def an_event(**extra: Any) -> dict[str, Any]:
    return {"event": "purchase", "user": {"userID": "u1"}, "timestamp": now_ms(), "metadata": {}, **extra}


def resolve(key: str) -> keys.ActiveKey | None:
    """What a function's key check makes of a key, in a sandbox that has not looked it up yet."""
    return keys.KeyCache(60).resolve(key)


def call(
    function: str,
    method: str,
    path: str,
    body: Any = None,
    *,
    key: str | None,
    query: str = "",
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any], str]:
    """(status, JSON body, raw body) of a request carrying `key` (None: no key header)."""
    event = http_event(method, path, body, query=query, key_kind=None, headers=headers)
    if key is not None:
        event["headers"]["service-api-key"] = key
    response = load_function(function).lambda_handler(event, LAMBDA_CONTEXT)
    return response["statusCode"], json.loads(response["body"]), response["body"]


def direct(function: str, method: str, path: str, body: Any = None, **kwargs: Any) -> tuple[int, Any]:
    """A request presenting the test store's key of a kind (tests/conftest.py http_event)."""
    response = load_function(function).lambda_handler(
        http_event(method, path, body, **kwargs), LAMBDA_CONTEXT
    )
    return response["statusCode"], json.loads(response["body"])


def assert_error_body(status: int, body: Any, expected: int | set[int]) -> None:
    """`{status, message, errors?}` with nothing of the implementation in it."""
    allowed = {expected} if isinstance(expected, int) else expected
    assert status in allowed, (status, body)
    assert isinstance(body, dict) and set(body) <= {"status", "message", "errors"}, body
    assert body["status"] == status and isinstance(body["message"], str) and body["message"], body
    for error in body.get("errors", []):
        assert set(error) == {"field", "message"} and all(isinstance(v, str) for v in error.values()), body
    leak = LEAKS.search(json.dumps(body))
    assert leak is None, f"the error body shows {leak.group(0)!r}: {body}"


@pytest.fixture
def bucket(aws: None) -> None:
    s3.create_bucket()


@pytest.fixture
def captured_logs(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> Iterator[Callable[[], str]]:
    """Everything logged or printed: the product's loggers at DEBUG (Powertools' JSON lines as
    Lambda writes them, and the records), other libraries at INFO, and stdout/stderr."""
    from expconsole.api.app import logger as powertools_logger

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(powertools_logger.registered_formatter)
    product = logging.getLogger("expconsole")
    product.addHandler(handler)
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="expconsole")

    def text() -> str:
        out, err = capfd.readouterr()
        return "\n".join([stream.getvalue(), caplog.text, out, err])

    try:
        yield text
    finally:
        product.removeHandler(handler)


def failing_calls(service: str, error: Exception) -> None:
    """Every call of the (cached) boto3 client for `service` raises `error` before it is sent."""

    def fail(**_: Any) -> None:
        raise error

    aws_clients.client(service).meta.events.register(f"before-call.{service}", fail)


def client_error(operation: str) -> ClientError:
    message = (
        f"Rate exceeded for table {TABLE_NAME} "
        f"(arn:aws:dynamodb:us-east-1:123456789012:table/{TABLE_NAME}); {INTERNAL_DETAIL}"
    )
    return ClientError(
        {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": message}}, operation
    )


# --- keys never logged --------------------------------------------------------------------------


def test_no_key_or_key_hash_reaches_the_logs(
    bucket: None, captured_logs: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    console, _ = keys.create_key("console", "ci")
    server, _ = keys.create_key("server", "webhooks")
    revoked, revoked_record = keys.create_key("console", "old laptop")
    assert keys.deactivate(revoked_record["keyId"])
    unknown = "console-" + secrets.token_urlsafe(32)
    plain = {"console": console, "server": server, "revoked": revoked, "unknown": unknown}
    keys.list_keys()

    answers = [
        (call("gates", "GET", GATES, key=console), 200),
        (call("gates", "POST", GATES, {"name": "checkout gate"}, key=console), 201),
        (call("gates", "POST", GATES, "{not json", key=console), 400),
        (call("gates", "POST", GATES, "{}", key=console, headers={"content-type": "text/plain"}), 415),
        (call("gates", "GET", f"{GATES}/nope", key=console), 404),
        (call("gates", "GET", GATES, key=unknown), 401),
        (call("gates", "GET", GATES, key=revoked), 401),
        (call("gates", "GET", GATES, key=server), 403),
        (call("gates", "GET", GATES, key=None), 401),
        (call("ingest", "POST", INGEST, [an_event()], key=server), 202),
        (call("ingest", "POST", INGEST, [an_event()], key=console), 403),
        (call("ingest", "POST", INGEST, " " * (MAX_BODY_BYTES + 1), key=server), 413),
        (call("ingest", "POST", INGEST, [{"event": "x"}], key=server), 400),
    ]

    def explode(*_: Any, **__: Any) -> Any:
        raise RuntimeError(INTERNAL_DETAIL)

    monkeypatch.setattr(gates, "list_gates", explode)
    answers.append((call("gates", "GET", GATES, key=console), 500))
    monkeypatch.setattr(gates, "get", lambda *_: (_ for _ in ()).throw(client_error("GetItem")))
    # Throttling that outlasts botocore's retries is "storage unavailable": a 503 (test_faults.py).
    answers.append((call("gates", "GET", f"{GATES}/checkout_gate", key=console), 503))

    for (status, _body, raw), expected in answers:
        assert status == expected, raw
        for name, value in plain.items():
            assert value not in raw and sha256(value) not in raw, f"a response shows the {name} key: {raw}"

    log = captured_logs()
    # The failures were logged (so the capture works), with the route but not the request.
    assert "Unhandled error" in log and INTERNAL_DETAIL in log and "ProvisionedThroughputExceeded" in log
    for name, value in plain.items():
        assert value not in log, f"the {name} key is in the log"
        assert sha256(value) not in log, f"the {name} key's hash is in the log"
    for line in log.splitlines():
        if line.startswith("{") and '"Unhandled error"' in line:
            record = json.loads(line)
            assert record["path"] == GATES or record["path"].startswith(f"{GATES}/"), record
            assert "service-api-key" not in line.lower() and "headers" not in record, record


def _expconsole(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(EXPCONSOLE), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_keys_cli_prints_the_key_once_and_stores_only_its_hash(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    made = {}
    for kind in ("console", "server"):
        created = _expconsole("keys", "create", "--kind", kind, "--data-dir", str(data_dir), cwd=tmp_path)
        assert created.returncode == 0, created.stderr
        assert created.stdout.count("\n") == 1, "stdout is the key and nothing else"
        made[kind] = created.stdout.strip()
        assert made[kind].startswith("console-" if kind == "console" else "secret-")
        assert made[kind] not in created.stderr and sha256(made[kind]) not in created.stderr
    listed = _expconsole("keys", "list", "--data-dir", str(data_dir), cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.strip().splitlines()) == 3  # a header and the two keys
    stored = [p for p in data_dir.rglob("*") if p.is_file()]
    assert stored, "the data dir holds the state"
    for kind, key in made.items():
        assert key not in listed.stdout + listed.stderr and sha256(key) not in listed.stdout + listed.stderr
        holding = [p.name for p in stored if key.encode() in p.read_bytes()]
        assert not holding, f"the {kind} key is stored in plain text in {holding}"


# --- keys stored as hashes, looked up by hash, compared in constant time -------------------------


@pytest.fixture
def dynamodb_calls(aws: None) -> list[tuple[str, str]]:
    """(operation, JSON of its parameters) of every DynamoDB call made through expconsole.aws."""
    calls: list[tuple[str, str]] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        calls.append((model.name, json.dumps(params, default=str)))

    aws_clients.client("dynamodb").meta.events.register("before-parameter-build.dynamodb", record)
    return calls


def test_a_plain_key_never_reaches_dynamodb(dynamodb_calls: list[tuple[str, str]]) -> None:
    plain, record = keys.create_key("console", "ci")
    assert resolve(plain) == keys.ActiveKey(key_id=record["keyId"], kind="console")
    assert resolve(plain + "x") is None
    keys.list_keys()
    assert keys.deactivate(record["keyId"])
    assert dynamodb_calls, "the store was used"
    assert not [op for op, params in dynamodb_calls if plain in params], "a call carried the plain key"
    assert any(sha256(plain) in params for _, params in dynamodb_calls)

    items = aws_clients.client("dynamodb").scan(TableName=TABLE_NAME)["Items"]
    [item] = [i for i in items if i["PK"]["S"] == f"KEY#{sha256(plain)}"]
    assert item["PK"]["S"] == f"KEY#{sha256(plain)}"
    assert plain not in json.dumps(items)
    assert json.loads(item["doc"]["S"])["keyHash"] == sha256(plain)


def test_a_presented_key_is_one_lookup_by_its_hash(dynamodb_calls: list[tuple[str, str]]) -> None:
    """No scan or query over the keys, whose time would depend on which key is near."""
    plain, _ = keys.create_key("server")
    for presented in (plain, "secret-" + secrets.token_urlsafe(32), plain[:-1]):
        dynamodb_calls.clear()
        resolve(presented)
        assert [op for op, _ in dynamodb_calls] == ["GetItem"]
        key = json.loads(dynamodb_calls[0][1])["Key"]
        assert key == {"PK": {"S": f"KEY#{sha256(presented)}"}, "SK": {"S": "KEY"}}


def test_the_stored_hash_is_compared_with_compare_digest(aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from expconsole.api import auth

    compared: list[tuple[Any, Any, bool]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        result = real(a, b)
        compared.append((a, b, result))
        return result

    monkeypatch.setattr(hmac, "compare_digest", spy)
    monkeypatch.setattr(secrets, "compare_digest", spy)
    monkeypatch.setattr(auth, "compare_digest", spy, raising=False)
    plain, record = keys.create_key("console")
    assert resolve(plain) == keys.ActiveKey(key_id=record["keyId"], kind="console")
    expected = sha256(plain)
    assert [(_text(a), _text(b), r) for a, b, r in compared] == [(expected, expected, True)]


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


# --- request size limits --------------------------------------------------------------------------


def test_ingestion_takes_exactly_1_mib_and_refuses_one_byte_more(bucket: None) -> None:
    batch = json.dumps([an_event(), an_event(value=2)])
    padded = batch + " " * (MAX_BODY_BYTES - len(batch))
    assert direct("ingest", "POST", INGEST, padded, key_kind="server") == (
        202,
        {"success": True, "accepted": 2, "duplicates": 0},
    )
    status, body = direct("ingest", "POST", INGEST, padded + " ", key_kind="server")
    assert_error_body(status, body, 413)
    assert "1048576 bytes (1 MiB)" in body["message"] and str(MAX_BODY_BYTES + 1) in body["message"]


def test_ingestion_limit_counts_bytes_not_characters(bucket: None) -> None:
    text = "é" * (MAX_BODY_BYTES // 2)  # fewer characters than the limit, more bytes
    body_text = json.dumps([an_event(metadata={"note": text})], ensure_ascii=False)
    assert len(body_text) < MAX_BODY_BYTES < len(body_text.encode())
    status, body = direct("ingest", "POST", INGEST, body_text, key_kind="server")
    assert_error_body(status, body, 413)
    assert "1 MiB" in body["message"]


def test_ingestion_limit_applies_to_the_decoded_body_of_a_base64_request(bucket: None) -> None:
    raw = json.dumps([an_event()]).encode()
    for size, expected in ((MAX_BODY_BYTES, 202), (MAX_BODY_BYTES + 1, 413)):
        event = http_event(
            "POST", INGEST, base64.b64encode(raw + b" " * (size - len(raw))).decode(), key_kind="server"
        )
        event["isBase64Encoded"] = True
        response = load_function("ingest").lambda_handler(event, LAMBDA_CONTEXT)
        assert response["statusCode"] == expected, response["body"][:300]


def test_ingestion_takes_2000_events_and_refuses_2001(bucket: None) -> None:
    batch = [an_event(metadata={"i": str(i)}) for i in range(MAX_EVENTS + 1)]
    status, body = direct("ingest", "POST", INGEST, batch, key_kind="server")
    assert_error_body(status, body, 413)
    assert (
        f"{MAX_EVENTS + 1} events" in body["message"] and f"limit is {MAX_EVENTS} events" in body["message"]
    )
    assert direct("ingest", "POST", INGEST, batch[:MAX_EVENTS], key_kind="server") == (
        202,
        {"success": True, "accepted": MAX_EVENTS, "duplicates": 0},
    )


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


_CONDITION = {"type": "email", "operator": "any", "targetValue": [f"user{i}@example.com" for i in range(20)]}


@pytest.mark.parametrize(
    ("function", "path", "body"),
    [
        pytest.param("gates", GATES, json.dumps({"name": "x" * (10 * 1024 * 1024)}), id="10-MiB-name"),
        pytest.param(
            "gates",
            GATES,
            json.dumps({"name": "long", "description": "x" * (5 * 1024 * 1024)}),
            id="5-MiB-field",
        ),
        pytest.param(
            "experiments",
            "/console/v1/experiments",
            json.dumps({"name": "long hypothesis", "hypothesis": "x" * (5 * 1024 * 1024)}),
            id="5-MiB-experiment-field",
        ),
        pytest.param("gates", GATES, json.dumps({"name": "tagged", "tags": ["t"] * 200_000}), id="200k-tags"),
        pytest.param(
            "gates",
            GATES,
            json.dumps(
                {
                    "name": "wide gate",
                    "rules": [
                        {"name": f"r{i}", "passPercentage": 10, "conditions": [_CONDITION] * 100}
                        for i in range(10)
                    ],
                }
            ),
            id="500-KB-valid-gate",
        ),
        pytest.param("gates", GATES, '{"name": "deep", "tags": ' + _nested(100_000) + "}", id="deep-json"),
        pytest.param("gates", GATES, _nested(100_000), id="deep-json-body"),
        pytest.param("ingest", INGEST, _nested(100_000), id="deep-json-ingest"),
        pytest.param(
            "ingest",
            INGEST,
            json.dumps([an_event(metadata={"a": "PLACEHOLDER"})]).replace('"PLACEHOLDER"', _nested(5_000)),
            id="deep-metadata",
        ),
    ],
)
def test_large_or_deep_bodies_are_refused_with_a_4xx_never_a_500(
    bucket: None, function: str, path: str, body: str
) -> None:
    """API Gateway passes bodies up to 10 MB; whatever fits must get a client error, not a 500."""
    kind = "server" if function == "ingest" else "console"
    status, answer = direct(function, "POST", path, body, key_kind=kind)
    if status < 300:
        return  # stored: fine as long as it was not a 500
    assert_error_body(status, answer, {400, 409, 413})


# --- error bodies ---------------------------------------------------------------------------------


ERROR_CASES = [
    ("gates", "POST", GATES, "{not json", {}, 400),
    ("gates", "POST", GATES, {"name": 5, "rules": "all"}, {}, 400),
    ("gates", "POST", GATES, {"name": "g1", "secretField": 1}, {}, 400),
    ("gates", "GET", GATES, None, {"query": "limit=abc&page=-1"}, 400),
    ("experiments", "POST", "/console/v1/experiments", {"name": "e", "allocation": "all"}, {}, 400),
    ("metrics", "POST", "/console/v1/metrics", {"name": "m", "type": "nonsense"}, {}, 400),
    (
        "dynamic_configs",
        "POST",
        "/console/v1/dynamic_configs",
        {"name": "dc", "defaultValueJson5": "{a:"},
        {},
        400,
    ),
    (
        "warehouse_sources",
        "POST",
        "/console/v1/experiments/qualifying_events",
        {"name": "q", "sql": "DROP TABLE x"},
        {},
        400,
    ),
    ("ingest", "POST", INGEST, "[", {"key_kind": "server"}, 400),
    ("ingest", "POST", INGEST, [{"event": 1, "user": {}, "timestamp": 10}], {"key_kind": "server"}, 400),
    ("gates", "GET", GATES, None, {"key_kind": None}, 401),
    ("gates", "GET", GATES, None, {"key_kind": "unknown"}, 401),
    ("ingest", "POST", INGEST, [], {"key_kind": "unknown"}, 401),
    ("gates", "GET", GATES, None, {"key_kind": "server"}, 403),
    ("ingest", "POST", INGEST, [], {"key_kind": "console"}, 403),
    ("gates", "GET", f"{GATES}/nope", None, {}, 404),
    ("experiments", "GET", "/console/v1/experiments/nope", None, {}, 404),
    ("metrics", "GET", "/console/v1/metrics/nope::sum", None, {}, 404),
    ("gates", "GET", "/console/v1/nothing/here", None, {}, 404),
    ("gates", "DELETE", GATES, None, {}, 404),  # an unrouted method: API Gateway answers 404, never 405
    ("ingest", "POST", INGEST, "x" * (MAX_BODY_BYTES + 1), {"key_kind": "server"}, 413),
    ("gates", "POST", GATES, "{}", {"headers": {"content-type": "text/plain"}}, 415),
    ("ingest", "POST", INGEST, "{}", {"key_kind": "server", "headers": {"content-type": "text/csv"}}, 415),
]


@pytest.mark.parametrize(
    ("function", "method", "path", "body", "kwargs", "status"),
    ERROR_CASES,
    ids=[f"{c[5]}-{c[0]}-{c[1]}-{i}" for i, c in enumerate(ERROR_CASES)],
)
def test_client_errors_are_plain_error_bodies(
    bucket: None, function: str, method: str, path: str, body: Any, kwargs: dict[str, Any], status: int
) -> None:
    got, answer = direct(function, method, path, body, **kwargs)
    assert_error_body(got, answer, status)


def test_a_conflict_is_a_plain_error_body(aws: None) -> None:
    assert direct("gates", "POST", GATES, {"name": "twice"})[0] == 201
    status, body = direct("gates", "POST", GATES, {"name": "twice"})
    assert_error_body(status, body, 409)


@pytest.mark.parametrize(("function", "path", "query"), LIST_ROUTES, ids=[r[0] for r in LIST_ROUTES])
def test_an_internal_failure_is_a_generic_500(bucket: None, function: str, path: str, query: str) -> None:
    for service in ("dynamodb", "s3"):
        failing_calls(service, RuntimeError(INTERNAL_DETAIL))
    status, body = direct(function, "GET", path, query=query)
    assert_error_body(status, body, 500)
    assert body == {"status": 500, "message": GENERIC_500}


@pytest.mark.parametrize(("function", "path", "query"), LIST_ROUTES, ids=[r[0] for r in LIST_ROUTES])
def test_a_storage_error_names_no_table_arn_or_exception(
    bucket: None, function: str, path: str, query: str
) -> None:
    for service in ("dynamodb", "s3"):
        failing_calls(service, client_error("Query"))
    status, body = direct(function, "GET", path, query=query)
    assert_error_body(status, body, {500, 503})


@pytest.mark.parametrize("service", ["s3", "dynamodb"])
@pytest.mark.parametrize("error", ["ClientError", "RuntimeError"])
def test_an_ingestion_storage_failure_is_a_503_without_internals(
    bucket: None, service: str, error: str
) -> None:
    """S3 failing stores nothing; DynamoDB failing leaves the counters: both a 503 saying to retry."""
    assert keys.cache().resolve(TEST_KEYS["server"])  # a warm sandbox: the key is read before the fault
    failing_calls(
        service, client_error("PutObject") if error == "ClientError" else RuntimeError(INTERNAL_DETAIL)
    )
    status, body = direct("ingest", "POST", INGEST, [an_event()], key_kind="server")
    assert_error_body(status, body, 503)
    assert "Retry" in body["message"]
