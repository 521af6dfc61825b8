"""End-to-end: event ingestion over HTTP against the local server.

Each test uses event names of its own (a uuid suffix), since the server is shared by the
session; stored events are checked through the catalogue (`/console/v1/events/{name}`).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
import requests

from tests.e2e.client import ApiClient

PATH = "/v1/webhooks/event_webhook"
DAY_MS = 86_400_000


def uid() -> str:
    return uuid.uuid4().hex[:10]


def now_ms() -> int:
    return int(time.time() * 1000)


def ev(name: str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"event": name, "user": {"userID": "u1"}, "timestamp": now_ms(), "metadata": {}}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not ...}


def records(api: ApiClient, name: str, **params: Any) -> dict[str, Any]:
    resp = api.get(f"/console/v1/events/{name}", params={"limit": 1000, **params})
    assert resp.status_code == 200, resp.text
    return resp.json()


def post(server_api: ApiClient, body: Any) -> requests.Response:
    return server_api.post(PATH, json=body)


def test_one_event_is_accepted_and_listed(server_api: ApiClient, api: ApiClient) -> None:
    name = f"signup_{uid()}"
    ts = now_ms() - 1000
    resp = post(
        server_api,
        {
            "event": name,
            "user": {"userID": "alice", "stableID": "dev-1", "country": "FR"},
            "timestamp": ts,
            "metadata": {"plan": "pro"},
            "value": 12.5,
        },
    )
    assert resp.status_code == 202, resp.text
    assert resp.json() == {"success": True, "accepted": 1, "duplicates": 0}
    data = records(api, name)["data"]
    assert data == [
        {
            "timestamp": str(ts),
            "name": name,
            "source": "webhook",
            "value": "12.5",
            "userID": "alice",
            "metadata": {"plan": "pro"},
        }
    ]


def test_array_and_events_batches_are_accepted(server_api: ApiClient, api: ApiClient) -> None:
    name = f"click_{uid()}"
    t = now_ms()
    resp = post(server_api, [ev(name, timestamp=t - 3, value="a"), ev(name, timestamp=t - 2)])
    assert resp.status_code == 202, resp.text
    assert resp.json()["accepted"] == 2
    resp = post(server_api, {"events": [ev(name, timestamp=t - 1, user={"stableID": "s9"})]})
    assert resp.status_code == 202, resp.text
    body = records(api, name)
    assert body["pagination"]["totalItems"] == 3
    assert [r["timestamp"] for r in body["data"]] == [str(t - 1), str(t - 2), str(t - 3)]
    assert body["data"][0]["userID"] == ""  # only a stableID
    assert [r["value"] for r in body["data"]] == ["", "", "a"]


def test_a_missing_timestamp_is_the_time_of_receipt(server_api: ApiClient, api: ApiClient) -> None:
    name = f"nots_{uid()}"
    before = now_ms()
    assert post(server_api, ev(name, timestamp=...)).status_code == 202
    (record,) = records(api, name)["data"]
    assert before <= int(record["timestamp"]) <= now_ms()


def test_a_retried_request_stores_nothing_twice(server_api: ApiClient, api: ApiClient) -> None:
    name = f"retry_{uid()}"
    batch = [ev(name, timestamp=now_ms() - 10), ev(name, timestamp=now_ms() - 10)]  # same event twice
    for _ in range(3):
        assert post(server_api, batch).status_code == 202
    # the same events, re-serialised with other whitespace and in the {events} envelope: a retry too
    resp = server_api.post(
        PATH, data=json.dumps({"events": batch}, indent=2), headers={"Content-Type": "application/json"}
    )
    assert resp.status_code == 202
    assert records(api, name)["pagination"]["totalItems"] == 2
    summary = api.get(f"/console/v1/events/{name}/summary").json()["data"]
    assert summary["totalCount"] == 2
    # a different batch holding the same event again is new
    assert post(server_api, [batch[0], ev(name, timestamp=now_ms() - 5)]).status_code == 202
    assert records(api, name)["pagination"]["totalItems"] == 4


def test_one_batch_lands_in_two_day_partitions(server_api: ApiClient, api: ApiClient) -> None:
    name = f"days_{uid()}"
    t = now_ms()
    assert post(server_api, [ev(name, timestamp=t), ev(name, timestamp=t - 3 * DAY_MS)]).status_code == 202
    summary = api.get(f"/console/v1/events/{name}/summary").json()["data"]
    today = time.strftime("%Y-%m-%d", time.gmtime(t / 1000))
    three_ago = time.strftime("%Y-%m-%d", time.gmtime((t - 3 * DAY_MS) / 1000))
    assert [(d["date"], d["count"]) for d in summary["days"]] == [(today, 1), (three_ago, 1)]
    assert records(api, name)["pagination"]["totalItems"] == 2
    assert records(api, name, days=1)["pagination"]["totalItems"] == 1
    assert records(api, name, startDate=three_ago, endDate=three_ago)["data"][0]["timestamp"] == str(
        t - 3 * DAY_MS
    )


INVALID: list[tuple[str, Any, str]] = [
    ("event", ..., "is required"),
    ("event", "", "1 to 128"),
    ("event", "x" * 129, "1 to 128"),
    ("event", 5, "must be a string"),
    ("user", ..., "is required"),
    ("user", "alice", "must be an object"),
    ("user", {"country": "FR"}, "userID or stableID"),
    ("user", {"userID": ""}, "userID or stableID"),
    ("user.userID", {"userID": 7}, "must be a string"),
    ("user.stableID", {"stableID": ["s"]}, "must be a string"),
    ("timestamp", 1_700_000_000, "looks like seconds"),
    ("timestamp", "1700000000000", "must be an integer"),
    ("timestamp", 1.5e12 + 0.5, "must be an integer"),
    ("timestamp", True, "must be an integer"),
    ("timestamp", "future", "more than a day in the future"),
    ("metadata", [1], "must be an object"),
    ("metadata", "x", "must be an object"),
    ("value", True, "string or a number"),
    ("value", {"a": 1}, "string or a number"),
    ("extra", 1, "unknown field"),
]


@pytest.mark.parametrize(
    ("field", "bad", "words"), INVALID, ids=[f"{f}-{i}" for i, (f, _, _) in enumerate(INVALID)]
)
def test_each_rule_is_a_400_naming_the_index_and_field_and_stores_nothing(
    server_api: ApiClient, api: ApiClient, field: str, bad: Any, words: str
) -> None:
    name = f"bad_{uid()}"
    top = field.split(".")[0]
    if bad == "future":
        bad = now_ms() + DAY_MS + 60_000
    wrong = ev(name, **{top: bad})
    batch = [ev(name), ev(name), ev(name), wrong, ev(name)]
    resp = post(server_api, batch)
    assert resp.status_code == 400, resp.text
    errors = resp.json()["errors"]
    assert [e["field"] for e in errors] == [f"events[3].{field}"], errors
    assert words in errors[0]["message"]
    assert f"events[3].{field}" in resp.json()["message"]
    assert records(api, name)["pagination"]["totalItems"] == 0


def test_every_bad_event_is_named(server_api: ApiClient) -> None:
    resp = post(server_api, {"events": [ev("ok"), {"user": {"userID": "u"}}, 7, ev("ok", metadata=[])]})
    assert resp.status_code == 400
    assert [e["field"] for e in resp.json()["errors"]] == [
        "events[1].event",
        "events[2]",
        "events[3].metadata",
    ]


@pytest.mark.parametrize(
    ("body", "field"),
    [("not json", "body"), ("", "body"), ("3", "body"), ("[]", "events"), ('{"events": {}}', "events")],
)
def test_malformed_bodies_are_400s(server_api: ApiClient, body: str, field: str) -> None:
    resp = server_api.post(PATH, data=body, headers={"Content-Type": "application/json"})
    assert resp.status_code == 400, resp.text
    assert resp.json()["errors"][0]["field"] == field


def test_a_single_event_error_is_events_0(server_api: ApiClient) -> None:
    resp = post(server_api, ev("x", timestamp=12))
    assert resp.status_code == 400
    assert resp.json()["errors"][0]["field"] == "events[0].timestamp"


def test_a_body_over_1_mib_is_a_413_naming_the_limit(server_api: ApiClient, api: ApiClient) -> None:
    name = f"big_{uid()}"
    body = json.dumps([ev(name, metadata={"pad": "x" * 600_000}), ev(name, metadata={"pad": "y" * 500_000})])
    assert len(body) > 1_048_576
    resp = server_api.post(PATH, data=body, headers={"Content-Type": "application/json"})
    assert resp.status_code == 413, resp.text
    assert "1048576" in resp.json()["message"]
    assert records(api, name)["pagination"]["totalItems"] == 0


def test_a_console_key_is_a_403_and_none_or_unknown_a_401(server: Any) -> None:
    body = ev("auth")
    with requests.Session() as s:
        assert (
            s.post(server.url + PATH, json=body, headers={"SERVICE-API-KEY": server.api_key}).status_code
            == 403
        )
        assert s.post(server.url + PATH, json=body).status_code == 401
        assert (
            s.post(server.url + PATH, json=body, headers={"SERVICE-API-KEY": "secret-nope"}).status_code
            == 401
        )


def test_a_non_json_content_type_is_refused(server_api: ApiClient) -> None:
    resp = server_api.post(PATH, data=json.dumps(ev("ct")), headers={"Content-Type": "text/plain"})
    assert resp.status_code == 415
