"""Keys: stored hashed, resolved by the authorizer, and the kind each route requires."""

from __future__ import annotations

import json
import logging

import pytest

from expconsole.api.auth import hash_key
from expconsole.services import keys
from expconsole.store import dynamo
from tests.conftest import LAMBDA_CONTEXT, Caller, http_event, load_function


def authorize(key: str | None) -> dict:
    authorizer = load_function("authorizer")
    headers = {} if key is None else {"SERVICE-API-KEY": key}
    return authorizer.lambda_handler(
        {"type": "REQUEST", "headers": headers, "identitySource": [key] if key else []}, LAMBDA_CONTEXT
    )


def test_keys_are_stored_only_as_hashes(aws: None) -> None:
    plain, record = keys.create_key("console", "ci")
    assert plain.startswith("console-") and len(plain) > 40
    stored = json.dumps(dynamo.list_keys())
    assert plain not in stored
    assert hash_key(plain) in stored
    assert record["kind"] == "console" and record["active"] is True and record["description"] == "ci"
    assert "keyHash" not in json.dumps(keys.list_keys())


def test_authorizer_resolves_kind_and_marks_unknown_keys(aws: None) -> None:
    console, record = keys.create_key("console")
    server, _ = keys.create_key("server")
    assert authorize(console)["context"] == {"keyKind": "console", "keyId": record["keyId"]}
    assert authorize(server)["context"]["keyKind"] == "server"
    assert authorize("console-not-a-real-key")["context"]["keyKind"] == "unknown"
    assert authorize(console.upper())["context"]["keyKind"] == "unknown"


def test_deactivated_keys_are_unknown(aws: None) -> None:
    plain, record = keys.create_key("console")
    other, _ = keys.create_key("console")
    assert keys.deactivate(record["keyId"]) is True
    assert authorize(plain)["context"]["keyKind"] == "unknown"
    assert authorize(other)["context"]["keyKind"] == "console"
    assert keys.deactivate("no-such-key") is False


@pytest.mark.parametrize(
    ("key_kind", "status"),
    [(None, 401), ("unknown", 401), ("server", 403), ("console", 200)],
)
def test_console_routes_require_a_console_key(aws: None, key_kind: str | None, status: int) -> None:
    code, body = Caller("gates")("GET", "/console/v1/gates", key_kind=key_kind)
    assert code == status
    if status != 200:
        assert body["status"] == status and "SERVICE-API-KEY" in body["message"]


def test_no_key_reaches_the_logs(
    aws: None, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture
) -> None:
    plain, _ = keys.create_key("console")
    gates = load_function("gates")
    caplog.set_level(logging.DEBUG)
    event = http_event("POST", "/console/v1/gates", "{not json", headers={"service-api-key": plain})
    gates.lambda_handler(event, LAMBDA_CONTEXT)
    authorize(plain)
    captured = capsys.readouterr()
    assert plain not in caplog.text + captured.out + captured.err
