"""End-to-end: the logged events catalogue (/console/v1/events) against the local server."""

from __future__ import annotations

import time
import uuid
from typing import Any

import requests

from tests.e2e.client import ApiClient

INGEST = "/v1/webhooks/event_webhook"
EVENTS = "/console/v1/events"
DAY_MS = 86_400_000


def uid() -> str:
    return uuid.uuid4().hex[:10]


def ingest(server_api: ApiClient, events: list[dict[str, Any]]) -> None:
    resp = server_api.post(INGEST, json=events)
    assert resp.status_code == 202, resp.text


def ev(name: str, ts: int, **metadata: Any) -> dict[str, Any]:
    return {"event": name, "user": {"userID": f"u-{ts}"}, "timestamp": ts, "metadata": metadata}


def test_the_list_is_newest_first_paginated_and_holds_the_record_fields(
    server_api: ApiClient, api: ApiClient
) -> None:
    name = f"cat_{uid()}"
    future = int(time.time() * 1000) + 3_600_000  # newer than anything other tests log
    ingest(server_api, [ev(name, future - i, i=i) for i in range(5)])
    resp = api.get(EVENTS, params={"limit": 2})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert [r["timestamp"] for r in body["data"]] == [str(future), str(future - 1)]
    assert set(body["data"][0]) == {"timestamp", "name", "source", "value", "userID", "metadata"}
    assert body["data"][0]["name"] == name and body["data"][0]["source"] == "webhook"
    assert body["pagination"]["totalItems"] >= 5
    assert body["pagination"]["itemsPerPage"] == 2
    assert body["pagination"]["nextPage"] == f"{EVENTS}?page=2&limit=2"
    page2 = api.get(EVENTS, params={"limit": 2, "page": 2}).json()["data"]
    assert [r["timestamp"] for r in page2] == [str(future - 2), str(future - 3)]


def test_the_default_window_is_seven_days(server_api: ApiClient, api: ApiClient) -> None:
    name = f"old_{uid()}"
    now = int(time.time() * 1000)
    ingest(server_api, [ev(name, now - 10 * DAY_MS), ev(name, now)])
    assert api.get(f"{EVENTS}/{name}").json()["pagination"]["totalItems"] == 1
    assert api.get(f"{EVENTS}/{name}", params={"days": 11}).json()["pagination"]["totalItems"] == 2
    bad = api.get(EVENTS, params={"days": 32})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "days"
    bad = api.get(EVENTS, params={"startDate": "2026-01-01", "endDate": "2026-03-01"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "endDate"
    bad = api.get(EVENTS, params={"startDate": "yesterday"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "startDate"


def test_one_event_records_only_that_event(server_api: ApiClient, api: ApiClient) -> None:
    a, b = f"a_{uid()}", f"b_{uid()}"
    now = int(time.time() * 1000)
    ingest(server_api, [ev(a, now - 2), ev(b, now - 1), ev(a, now)])
    body = api.get(f"{EVENTS}/{a}").json()
    assert [(r["name"], r["timestamp"]) for r in body["data"]] == [(a, str(now)), (a, str(now - 2))]
    assert api.get(f"{EVENTS}/never_{uid()}").json()["pagination"]["totalItems"] == 0


def test_the_summary_has_daily_counts_last_seen_and_metadata_keys(
    server_api: ApiClient, api: ApiClient
) -> None:
    name = f"sum_{uid()}"
    now = int(time.time() * 1000)
    before = now
    ingest(server_api, [ev(name, now, plan="pro"), ev(name, now - 1, country="FR"), ev(name, now - DAY_MS)])
    resp = api.get(f"{EVENTS}/{name}/summary")
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["name"] == name and data["totalCount"] == 3
    assert [d["count"] for d in data["days"]] == [2, 1]
    assert data["metadataKeys"] == ["country", "plan"]
    assert before - 60_000 <= data["lastSeen"] <= int(time.time() * 1000)
    missing = api.get(f"{EVENTS}/never_{uid()}/summary")
    assert missing.status_code == 404


def test_metrics_of_an_event_are_the_builtins_and_the_stored_metrics_naming_it(api: ApiClient) -> None:
    name = f"pay_{uid()}"
    other = f"other_{uid()}"
    made = []
    for body in (
        {"name": f"sum {uid()}", "type": "sum", "metricEvents": [{"name": name}]},
        {
            "name": f"funnel {uid()}",
            "type": "funnel",
            "funnelEventList": [{"name": other, "type": "event_dau"}, {"name": name, "type": "event_count"}],
        },
        {"name": f"unrelated {uid()}", "type": "sum", "metricEvents": [{"name": other}]},
    ):
        resp = api.post("/console/v1/metrics", json=body)
        assert resp.status_code == 201, resp.text
        made.append(resp.json()["data"]["id"])
    resp = api.get(f"{EVENTS}/{name}/metrics")
    assert resp.status_code == 200, resp.text
    ids = [m["id"] for m in resp.json()["data"]]
    assert ids[:2] == [f"{name}::event_count", f"{name}::event_dau"]
    assert sorted(ids[2:]) == sorted(made[:2])
    assert resp.json()["pagination"]["totalItems"] == 4
    page = api.get(f"{EVENTS}/{name}/metrics", params={"limit": 1, "page": 2}).json()
    assert [m["id"] for m in page["data"]] == [f"{name}::event_dau"]


def test_the_catalogue_needs_a_console_key(server: Any) -> None:
    with requests.Session() as s:
        assert (
            s.get(server.url + EVENTS, headers={"SERVICE-API-KEY": server.server_secret}).status_code == 403
        )
        assert s.get(server.url + EVENTS).status_code == 401
