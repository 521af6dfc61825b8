"""Ingestion and the catalogue through their handlers on moto: storage failures and retries."""

from __future__ import annotations

import gzip
import json
import time
from typing import Any

import pytest

from expconsole.store import event_counters, s3
from tests.conftest import Caller

PATH = "/v1/webhooks/event_webhook"
DAY_MS = 86_400_000


@pytest.fixture
def ingest_fn(aws: None) -> Caller:
    s3.create_bucket()
    return Caller("ingest")


@pytest.fixture
def events_fn(aws: None) -> Caller:
    return Caller("events")


def _event(name: str, ts: int, **extra: Any) -> dict[str, Any]:
    return {"event": name, "user": {"userID": "u1"}, "timestamp": ts, "metadata": {"k": "v"}, **extra}


def _stored_lines() -> list[dict[str, Any]]:
    out = []
    for key in s3.keys(s3.PREFIX):
        out.extend(json.loads(line) for line in gzip.decompress(s3.get(key)).decode().splitlines())
    return out


def _two_day_batch() -> list[dict[str, Any]]:
    now = int(time.time() * 1000)
    return [_event("buy", now - 2 * DAY_MS), _event("buy", now), _event("view", now, value=3)]


def test_a_failed_second_object_is_a_503_and_the_retry_stores_the_batch_once(
    ingest_fn: Caller, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = _two_day_batch()
    real_put = s3.put
    calls: list[str] = []

    def flaky_put(key: str, body: bytes) -> None:
        calls.append(key)
        if len(calls) == 2:
            raise RuntimeError("S3 is down")
        real_put(key, body)

    monkeypatch.setattr(s3, "put", flaky_put)
    status, body = ingest_fn("POST", PATH, batch, key_kind="server")
    assert status == 503, body
    assert "Retry" in body["message"]
    assert len(_stored_lines()) == 1  # the first object only; nothing counted
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert event_counters.for_day(today) == []

    monkeypatch.setattr(s3, "put", real_put)
    status, body = ingest_fn("POST", PATH, batch, key_kind="server")
    assert (status, body) == (202, {"success": True, "accepted": 3, "duplicates": 0})
    lines = _stored_lines()
    assert sorted((line["event"], line["timestamp"]) for line in lines) == sorted(
        (e["event"], e["timestamp"]) for e in batch
    )
    assert all(line["source"] == "webhook" and "receivedTime" in line for line in lines)
    counts = {(c["date"], c["name"]): c["count"] for c in event_counters.for_day(today)}
    assert counts == {(today, "buy"): 1, (today, "view"): 1}
    assert sum(c["count"] for c in event_counters.for_event("buy")) == 2


def test_a_retry_after_success_counts_nothing_twice(ingest_fn: Caller, events_fn: Caller) -> None:
    batch = _two_day_batch()
    for _ in range(3):
        assert ingest_fn("POST", PATH, {"events": batch}, key_kind="server")[0] == 202
    assert len(_stored_lines()) == 3
    assert sum(c["count"] for c in event_counters.for_event("buy")) == 2
    status, body = events_fn("GET", "/console/v1/events")
    assert status == 200
    assert body["pagination"]["totalItems"] == 3


def test_a_failed_counter_transaction_is_a_503_and_the_retry_counts_once(
    ingest_fn: Caller, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = _two_day_batch()
    real = event_counters.record
    state = {"n": 0}

    def flaky(*args: Any) -> int:
        state["n"] += 1
        if state["n"] == 2:
            raise RuntimeError("DynamoDB throttled")
        return real(*args)

    monkeypatch.setattr(event_counters, "record", flaky)
    assert ingest_fn("POST", PATH, batch, key_kind="server")[0] == 503
    assert ingest_fn("POST", PATH, batch, key_kind="server")[0] == 202
    assert sum(c["count"] for c in event_counters.for_event("buy")) == 2
    assert sum(c["count"] for c in event_counters.for_event("view")) == 1


def test_a_console_key_is_refused_and_no_key_is_a_401(ingest_fn: Caller) -> None:
    assert ingest_fn("POST", PATH, _two_day_batch(), key_kind="console")[0] == 403
    assert ingest_fn("POST", PATH, _two_day_batch(), key_kind=None)[0] == 401


def test_2001_events_is_a_413_naming_the_limit_and_2000_are_accepted(ingest_fn: Caller) -> None:
    """The count limit is the ingest service's (moved from tests/e2e: no gateway is involved)."""
    now = int(time.time() * 1000)
    status, body = ingest_fn("POST", PATH, [_event("many", now) for _ in range(2001)], key_kind="server")
    assert status == 413, body
    assert "2000" in body["message"]
    assert _stored_lines() == []  # refused whole: nothing of it is stored
    status, body = ingest_fn("POST", PATH, [_event("many", now) for _ in range(2000)], key_kind="server")
    assert status == 202, body
    assert body["accepted"] == 2000


def test_more_than_99_event_names_in_one_object_are_counted_in_chunks_once(ingest_fn: Caller) -> None:
    now = int(time.time() * 1000)
    batch = [_event(f"e{i:03d}", now) for i in range(150)]
    for _ in range(2):
        assert ingest_fn("POST", PATH, batch, key_kind="server")[0] == 202
    today = time.strftime("%Y-%m-%d", time.gmtime())
    counters = event_counters.for_day(today)
    assert len(counters) == 150 and {c["count"] for c in counters} == {1}
    assert counters[0]["metadataKeys"] == ["k"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"event": "e", "user": {"userID": "u"}, "metadata": {"x": NaN}}', "NaN"),
        ('{"event": "e", "user": {"userID": "u"}, "value": Infinity}', "Infinity"),
        ('{"event": "e\\ud800", "user": {"userID": "u"}}', "surrogate"),
    ],
    ids=["nan-in-metadata", "infinity-value", "lone-surrogate"],
)
def test_json_that_is_not_json_text_is_a_400_and_stores_nothing(
    ingest_fn: Caller, body: str, words: str
) -> None:
    status, out = ingest_fn("POST", "/v1/webhooks/event_webhook", body, key_kind="server")
    assert status == 400, out
    assert out["errors"][0]["field"] == "body" and words in out["message"]
    assert _stored_lines() == []
