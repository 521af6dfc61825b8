"""Keys: stored hashed, resolved by the function itself (through a per-sandbox cache), and the
kind each route requires; a missing or misplaced key is a 401 naming SERVICE-API-KEY."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from expconsole import aws as aws_clients
from expconsole.api.auth import hash_key
from expconsole.services import keys
from expconsole.store import dynamo, s3
from tests.conftest import LAMBDA_CONTEXT, TEST_KEYS, Caller, http_event, load_function
from tests.e2e.client import ApiClient

GATES = "/console/v1/gates"


class Clock:
    """A clock the test moves (no sleeping, no timed assertion)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def get_items(aws: None) -> list[str]:
    """The key hashes of the GetItem calls made on the store from now on."""
    calls: list[str] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        calls.append(params["Key"]["PK"]["S"].removeprefix("KEY#"))

    aws_clients.client("dynamodb").meta.events.register("before-parameter-build.dynamodb.GetItem", record)
    return calls


def gates_with(headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    event = http_event("GET", GATES, key_kind=None, headers=headers)
    response = load_function("gates").lambda_handler(event, LAMBDA_CONTEXT)
    return response["statusCode"], json.loads(response["body"])


def test_keys_are_stored_only_as_hashes(aws: None) -> None:
    plain, record = keys.create_key("console", "ci")
    assert plain.startswith("console-") and len(plain) > 40
    stored = json.dumps(dynamo.list_keys())
    assert plain not in stored
    assert hash_key(plain) in stored
    assert record["kind"] == "console" and record["active"] is True and record["description"] == "ci"
    assert "keyHash" not in json.dumps(keys.list_keys())


def test_a_key_resolves_to_its_kind_and_id_and_unknown_keys_to_nothing(aws: None) -> None:
    console, record = keys.create_key("console")
    server, _ = keys.create_key("server")
    cache = keys.KeyCache(60)
    assert cache.resolve(console) == keys.ActiveKey(key_id=record["keyId"], kind="console")
    assert cache.resolve(server) is not None and cache.resolve(server).kind == "server"  # type: ignore[union-attr]
    for presented in ("console-not-a-real-key", console.upper(), console + " ", ""):
        assert cache.resolve(presented) is None, presented


@pytest.mark.parametrize(
    ("key_kind", "status"),
    [(None, 401), ("unknown", 401), ("server", 403), ("console", 200)],
)
def test_console_routes_require_a_console_key(aws: None, key_kind: str | None, status: int) -> None:
    code, body = Caller("gates")("GET", GATES, key_kind=key_kind)
    assert code == status
    if status != 200:
        assert body["status"] == status and "SERVICE-API-KEY" in body["message"]


# --- the 401 names the header ------------------------------------------------------------------


def test_a_request_without_a_key_is_a_401_naming_the_header(aws: None) -> None:
    status, body = gates_with({})
    assert status == 401
    assert body == {
        "status": 401,
        "message": "Missing API key: send it in the SERVICE-API-KEY header (a console API key).",
        "errors": [{"field": "SERVICE-API-KEY", "message": "is required"}],
    }


@pytest.mark.parametrize(
    "authorization", [f"Bearer {TEST_KEYS['console']}", "Bearer nonsense", "Basic dXNlcjpwYXNz", "token"]
)
def test_a_key_sent_in_authorization_is_a_401_saying_it_goes_in_service_api_key(
    aws: None, authorization: str
) -> None:
    """Even the right key, sent as a Bearer token: the header is what the API reads."""
    status, body = gates_with({"Authorization": authorization})
    assert status == 401
    assert body["message"] == (
        "The API key goes in the SERVICE-API-KEY header, not Authorization: send "
        "`SERVICE-API-KEY: <key>` (a console API key)."
    )
    assert body["errors"][0]["field"] == "SERVICE-API-KEY"
    assert TEST_KEYS["console"] not in json.dumps(body)


def test_with_the_key_in_service_api_key_an_authorization_header_is_ignored(aws: None) -> None:
    status, _ = gates_with({"service-api-key": TEST_KEYS["console"], "authorization": "Bearer x"})
    assert status == 200


def test_the_statsig_header_is_read_on_sdk_routes_only(aws: None) -> None:
    status, body = gates_with({"statsig-api-key": TEST_KEYS["console"]})
    assert status == 401 and "SERVICE-API-KEY header, not STATSIG-API-KEY" in body["message"], body
    s3.create_bucket()
    sdk = load_function("sdk")
    for name in ("STATSIG-API-KEY", "statsig-api-key", "SERVICE-API-KEY"):
        event = http_event(
            "POST", "/v1/log_event", {"events": []}, key_kind=None, headers={name: TEST_KEYS["server"]}
        )
        assert sdk.lambda_handler(event, LAMBDA_CONTEXT)["statusCode"] == 202, name
    event = http_event("POST", "/v1/log_event", {"events": []}, key_kind=None)
    body = json.loads(sdk.lambda_handler(event, LAMBDA_CONTEXT)["body"])
    assert body["status"] == 401
    assert body["message"] == (
        "Missing API key: send it in the SERVICE-API-KEY (or STATSIG-API-KEY) header (a server secret)."
    )


def test_the_401s_reach_a_client_through_the_api(aws: None) -> None:
    """Through the in-process API (template.yaml's routing, every function's own check)."""
    from tests.functional.lambdas import Lambdas

    client = ApiClient("http://localhost:3000", TEST_KEYS["console"], transport=Lambdas())
    for path in (GATES, "/console/v1/experiments", "/console/v1/metrics"):
        missing = client.request("GET", path, key=None)
        assert missing.status_code == 401 and "SERVICE-API-KEY header" in missing.json()["message"], path
        bearer = client.request(
            "GET", path, key=None, headers={"Authorization": f"Bearer {TEST_KEYS['console']}"}
        )
        assert bearer.status_code == 401 and "not Authorization" in bearer.json()["message"], path
        assert client.request("GET", path).status_code == 200, path


# --- the per-sandbox cache ---------------------------------------------------------------------


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cache(aws: None, clock: Clock) -> Iterator[keys.KeyCache]:
    yield keys.KeyCache(60, clock=clock)


def test_a_cached_key_is_not_looked_up_again_until_its_ttl_passes(
    cache: keys.KeyCache, clock: Clock, get_items: list[str]
) -> None:
    plain = TEST_KEYS["console"]
    for _ in range(3):
        assert cache.resolve(plain) is not None
    assert get_items == [hash_key(plain)]  # one GetItem, by the hash; the hits read nothing
    clock.now += 60
    assert cache.resolve(plain) is not None
    assert get_items == [hash_key(plain)] * 2


def test_a_key_deactivated_elsewhere_works_here_until_the_ttl_then_is_refused(
    cache: keys.KeyCache, clock: Clock
) -> None:
    plain, record = keys.create_key("console")
    assert cache.resolve(plain) is not None
    dynamo.set_key_active(record["keyHash"], False)  # `expconsole keys deactivate`, another process
    clock.now += 59
    assert cache.resolve(plain) is not None
    clock.now += 1
    assert cache.resolve(plain) is None
    assert cache.resolve(plain) is None  # and stays refused (nothing cached for it)


def test_deactivating_in_this_sandbox_takes_effect_at_once(aws: None) -> None:
    plain, record = keys.create_key("console")
    assert keys.cache().resolve(plain) is not None
    assert keys.deactivate(record["keyId"]) is True
    assert keys.cache().resolve(plain) is None
    assert keys.deactivate("no-such-key") is False


def test_an_unknown_key_is_not_cached_so_a_key_registered_after_a_refusal_works_at_once(
    cache: keys.KeyCache, get_items: list[str]
) -> None:
    plain = "console-registered-a-moment-later-0123456789"
    assert cache.resolve(plain) is None
    keys.create_key("console", key=plain)
    assert cache.resolve(plain) is not None


def test_a_ttl_of_0_looks_the_key_up_on_every_request(aws: None, get_items: list[str]) -> None:
    cache = keys.KeyCache(0)
    for _ in range(3):
        assert cache.resolve(TEST_KEYS["server"]) is not None
    assert len(get_items) == 3


def test_the_ttl_is_the_key_cache_seconds_variable(aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    for value, ttl in (("", 60.0), ("300", 300.0), ("0", 0.0)):
        monkeypatch.setenv("KEY_CACHE_SECONDS", value)
        keys.reset_cache()
        assert keys.cache().ttl_seconds == ttl, value


def test_a_function_answers_from_its_cache(aws: None, get_items: list[str]) -> None:
    gates = Caller("gates")
    assert gates("GET", GATES)[0] == 200
    assert gates("GET", GATES)[0] == 200
    assert get_items.count(hash_key(TEST_KEYS["console"])) == 1


def test_a_storage_failure_while_reading_the_key_is_a_503(aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.exceptions import ClientError

    def throttled(*_: Any, **__: Any) -> Any:
        raise ClientError(
            {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}, "GetItem"
        )

    monkeypatch.setattr(dynamo, "get_key", throttled)
    status, body = Caller("gates")("GET", GATES)
    assert status == 503 and body["status"] == 503, body


# --- keys in logs ------------------------------------------------------------------------------


def test_no_key_reaches_the_logs(
    aws: None, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    plain, _ = keys.create_key("console")
    gates = load_function("gates")
    caplog.set_level(logging.DEBUG)
    for headers in ({"service-api-key": plain}, {"authorization": f"Bearer {plain}"}):
        event = http_event("POST", GATES, "{not json", key_kind=None, headers=headers)
        gates.lambda_handler(event, LAMBDA_CONTEXT)
    captured = capsys.readouterr()
    assert plain not in caplog.text + captured.out + captured.err
