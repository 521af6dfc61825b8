"""The Statsig SDK protocol through its handlers on moto: log_event, spec downloads, id lists,
the evaluation endpoints, and the gate-check counters they feed.

Entities are created through the console handlers, the spec document is built by the specs
function (what the table's stream invokes), and the SDK routes are called as API Gateway calls
them, with the test store's server secret (the function checks it). The real SDKs are exercised
in tests/e2e.
"""

from __future__ import annotations

import base64
import gzip
import json
import time
from typing import Any

import pytest

from expconsole.services import keys
from expconsole.services.sdk import documents
from expconsole.services.sdk.hashing import id_list_hash
from expconsole.store import event_counters, s3
from tests.conftest import LAMBDA_CONTEXT, Caller, http_event, load_function

SPECS_PATH = "/v1/download_config_specs/secret-abc.json"


@pytest.fixture
def api(aws: None) -> dict[str, Caller]:
    s3.create_bucket()
    names = ("gates", "experiments", "segments", "layers", "holdouts", "dynamic_configs")
    return {name: Caller(name) for name in names}


def rebuild() -> dict[str, Any]:
    """What the table's stream does after writes: invoke the specs function."""
    return load_function("specs").lambda_handler({"Records": [{"eventName": "MODIFY"}]}, LAMBDA_CONTEXT)


def sdk(
    method: str,
    path: str,
    body: Any = None,
    *,
    headers: dict[str, str] | None = None,
    query: str = "",
    key_kind: str = "server",
) -> dict[str, Any]:
    """The raw answer of the SDK function (bodies may be bytes); `body` bytes go base64-encoded."""
    raw = body if isinstance(body, bytes) else None
    event = http_event(method, path, None if raw else body, query=query, key_kind=key_kind, headers=headers)
    if raw is not None:
        event["body"] = base64.b64encode(raw).decode()
        event["isBase64Encoded"] = True
    return load_function("sdk").lambda_handler(event, LAMBDA_CONTEXT)


def body_bytes(response: dict[str, Any]) -> bytes:
    body = response.get("body") or ""
    return base64.b64decode(body) if response.get("isBase64Encoded") else body.encode()


def header(response: dict[str, Any], name: str) -> str | None:
    return {k.lower(): v for k, v in (response.get("headers") or {}).items()}.get(name.lower())


def as_json(response: dict[str, Any]) -> Any:
    return json.loads(body_bytes(response))


def created(caller: Caller, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, answer = caller("POST", path, body)
    assert status == 201, answer
    return answer["data"]


def stored_lines() -> list[dict[str, Any]]:
    out = []
    for key in sorted(s3.keys(s3.PREFIX)):
        out.extend(json.loads(line) for line in gzip.decompress(s3.get(key)).decode().splitlines())
    return out


def without_received(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in line.items() if k != "receivedTime"} for line in lines]


def now_ms() -> int:
    return int(time.time() * 1000)


def post_events(events: list[dict[str, Any]], *, gz: bool = False) -> tuple[int, Any]:
    payload = json.dumps({"events": events, "statsigMetadata": {"sdkType": "py-server"}}).encode()
    if gz:
        response = sdk("POST", "/v1/log_event", gzip.compress(payload), headers={"Content-Encoding": "gzip"})
    else:
        response = sdk("POST", "/v1/log_event", payload.decode())
    return response["statusCode"], as_json(response)


def assert_bad(status: int, body: Any, code: int, field: str) -> None:
    assert status == code, body
    assert body["status"] == code
    assert field in [e["field"] for e in body["errors"]], body


# --- a world of entities -------------------------------------------------------------------------


def make_experiment(api: dict[str, Caller], name: str, **extra: Any) -> dict[str, Any]:
    body = {
        "name": name,
        "groups": [
            {"name": "Control", "size": 50, "parameterValues": {"color": "grey"}},
            {"name": "Test", "size": 50, "parameterValues": {"color": "red"}},
        ],
        **extra,
    }
    return created(api["experiments"], "/console/v1/experiments", body)


def start(api: dict[str, Caller], exp_id: str) -> None:
    status, answer = api["experiments"]("PUT", f"/console/v1/experiments/{exp_id}/start", {})
    assert status == 200, answer


def user(uid: str = "u1") -> dict[str, Any]:
    return {"userID": uid, "customIDs": {"stableID": f"stable-{uid}"}}


def exposure(name: str, metadata: dict[str, Any], secondary: list[Any] | None = None, **extra: Any) -> dict:
    return {
        "eventName": name,
        "user": user(),
        "time": now_ms(),
        "metadata": metadata,
        "secondaryExposures": secondary or [],
        **extra,
    }


# --- log_event ------------------------------------------------------------------------------------


def test_custom_events_gzip_or_plain_keep_user_value_metadata_and_time(api: dict[str, Caller]) -> None:
    ts = now_ms() - 60_000
    event = {
        "eventName": "purchase",
        "user": {"userID": "u1", "customIDs": {"stableID": "s-1"}, "privateAttributes": {"ssn": "x"}},
        "value": 12.5,
        "metadata": {"sku": "a1"},
        "time": ts,
    }
    status, body = post_events([event], gz=True)
    assert (status, body["accepted"], body["skipped"]) == (202, 1, [])
    status, body = post_events([{**event, "eventName": "view", "value": "hero"}], gz=False)
    assert (status, body["accepted"]) == (202, 1)
    lines = {line["event"]: line for line in stored_lines()}
    assert set(lines) == {"purchase", "view"}
    purchase = lines["purchase"]
    assert purchase["user"]["userID"] == "u1" and purchase["user"]["stableID"] == "s-1"
    assert "privateAttributes" not in purchase["user"]
    assert (purchase["value"], purchase["metadata"], purchase["timestamp"]) == (12.5, {"sku": "a1"}, ts)
    assert purchase["source"] == "sdk"
    assert lines["view"]["value"] == "hero"


def test_a_retried_batch_stores_and_counts_nothing_twice(api: dict[str, Caller]) -> None:
    gate = created(api["gates"], "/console/v1/gates", {"name": "retry gate", "rules": []})
    rebuild()
    events = [
        {"eventName": "purchase", "user": user(), "value": 1, "time": now_ms()},
        exposure("statsig::gate_exposure", {"gate": gate["id"], "gateValue": "true", "ruleID": "r"}),
    ]
    payload = gzip.compress(json.dumps({"events": events}).encode())
    first = sdk("POST", "/v1/log_event", payload, headers={"Content-Encoding": "gzip"})
    keys_after_first = sorted(s3.keys(s3.PREFIX))
    lines_after_first = stored_lines()
    today = time.strftime("%Y-%m-%d", time.gmtime())
    counters_first = event_counters.for_day(today)
    _, gate_first = api["gates"]("GET", f"/console/v1/gates/{gate['id']}")
    second = sdk("POST", "/v1/log_event", payload, headers={"Content-Encoding": "gzip"})
    assert first["statusCode"] == second["statusCode"] == 202
    assert sorted(s3.keys(s3.PREFIX)) == keys_after_first
    # The same objects rewritten (only receivedTime may move): no line twice.
    assert without_received(stored_lines()) == without_received(lines_after_first)
    assert len(lines_after_first) == 2
    assert event_counters.for_day(today) == counters_first
    assert {c["name"]: c["count"] for c in counters_first}["purchase"] == 1
    _, gate_second = api["gates"]("GET", f"/console/v1/gates/{gate['id']}")
    assert (
        gate_first["data"]["checksPerHour"] == gate_second["data"]["checksPerHour"] == 0.04
    )  # 1 check over 24 hours


def test_exposures_become_experiment_and_holdout_exposures(api: dict[str, Caller]) -> None:
    exp = make_experiment(api, "button")
    start(api, exp["id"])
    prestart = make_experiment(api, "not started")
    layer = created(
        api["layers"],
        "/console/v1/layers",
        {
            "name": "checkout",
            "idType": "userID",
            "parameters": [{"name": "color", "type": "string", "defaultValue": "grey"}],
        },
    )
    in_layer = make_experiment(api, "layered", layerID=layer["id"], allocation=40)
    start(api, in_layer["id"])
    holdout = created(
        api["holdouts"],
        "/console/v1/holdouts",
        {"name": "hold", "passPercentage": 10, "experimentIDs": [exp["id"]]},
    )
    rebuild()
    group = exp["groups"][1]["id"]
    layer_group = in_layer["groups"][0]["id"]
    held = [{"gate": f"holdout:{holdout['id']}", "gateValue": "false", "ruleID": holdout["id"]}]
    layer_meta = {
        "config": layer["id"],
        "ruleID": layer_group,
        "allocatedExperiment": in_layer["id"],
        "parameterName": "color",
    }
    events = [
        exposure("statsig::config_exposure", {"config": exp["id"], "ruleID": group}, held),
        exposure("statsig::config_exposure", {"config": exp["id"], "ruleID": "layerAssignment"}),
        exposure("statsig::config_exposure", {"config": prestart["id"], "ruleID": "prestart"}),
        exposure("statsig::layer_exposure", {**layer_meta, "isExplicitParameter": "true"}),
        exposure("statsig::layer_exposure", {**layer_meta, "isExplicitParameter": "false"}),
        exposure(
            "statsig::gate_exposure", {"gate": f"holdout:{holdout['id']}", "gateValue": "true", "ruleID": "x"}
        ),
        {"eventName": "statsig::diagnostics", "user": user(), "metadata": {"context": "initialize"}},
        # checks of segments and inline targeting are parts of other checks, not gate checks
        exposure("statsig::gate_exposure", {"gate": "segment:s", "gateValue": "true", "ruleID": "r"}),
        exposure(
            "statsig::gate_exposure", {"gate": f"targeting:{exp['id']}", "gateValue": "true", "ruleID": "r"}
        ),
    ]
    status, body = post_events(events, gz=True)
    assert status == 202, body
    assert (body["accepted"], body["dropped"], body["skipped"]) == (4, 1, [])
    got = sorted(
        (line["event"], json.dumps(line["metadata"], sort_keys=True), line["user"]["userID"])
        for line in stored_lines()
    )
    want = sorted(
        [
            (
                "console::experiment_exposure",
                json.dumps({"experiment": exp["id"], "group": group}, sort_keys=True),
                "u1",
            ),
            (
                "console::holdout_exposure",
                json.dumps({"holdout": holdout["id"], "heldOut": False}, sort_keys=True),
                "u1",
            ),
            (
                "console::experiment_exposure",
                json.dumps({"experiment": in_layer["id"], "group": layer_group}, sort_keys=True),
                "u1",
            ),
            (
                "console::holdout_exposure",
                json.dumps({"holdout": holdout["id"], "heldOut": True}, sort_keys=True),
                "u1",
            ),
        ]
    )
    assert got == want


def test_bad_events_are_skipped_by_index_and_the_rest_stored(api: dict[str, Caller]) -> None:
    good = {"eventName": "purchase", "user": user(), "time": now_ms()}
    events = [
        good,
        {"eventName": "purchase", "user": {"email": "a@b.c"}, "time": now_ms()},  # no unit id
        {"eventName": "purchase", "user": user(), "time": 5},  # before 2000
        "not an object",
        {"eventName": "x" * 129, "user": user()},
        {**good, "eventName": "refund"},
        {**good, "time": "1790000000000"},  # a string is not a time: reported, not replaced
        {**good, "eventName": {"name": "purchase"}},  # not a name (it was a 500: unhashable)
    ]
    status, body = post_events(events)
    assert status == 202 and body["accepted"] == 2
    assert [s["index"] for s in body["skipped"]] == [1, 2, 3, 4, 6, 7]
    assert sorted(line["event"] for line in stored_lines()) == ["purchase", "refund"]


@pytest.mark.parametrize(
    ("payload", "headers", "field"),
    [
        (b"\x1f\x8bnot really gzip", {"Content-Encoding": "gzip"}, "body"),
        (b"{not json", {}, "body"),
        (json.dumps({"statsigMetadata": {}}).encode(), {}, "events"),
        (json.dumps({"events": {"a": 1}}).encode(), {}, "events"),
        (gzip.compress(b"[1, 2]"), {"Content-Encoding": "gzip"}, "events"),
    ],
    ids=["bad-gzip", "not-json", "no-events", "events-not-array", "not-an-object"],
)
def test_unreadable_batches_are_400_naming_the_field(
    api: dict[str, Caller], payload: bytes, headers: dict[str, str], field: str
) -> None:
    response = sdk("POST", "/v1/log_event", payload, headers=headers)
    assert_bad(response["statusCode"], as_json(response), 400, field)
    assert list(s3.keys(s3.PREFIX)) == []


def test_more_than_2000_events_is_413(api: dict[str, Caller]) -> None:
    events = [{"eventName": "e", "user": user(), "time": now_ms()}] * 2001
    status, body = post_events(events, gz=True)
    assert status == 413 and body["status"] == 413, body
    assert list(s3.keys(s3.PREFIX)) == []


def test_sdk_routes_refuse_console_keys(api: dict[str, Caller]) -> None:
    rebuild()
    for method, path, body in [
        ("POST", "/v1/log_event", {"events": []}),
        ("GET", SPECS_PATH, None),
        ("POST", "/v1/get_id_lists", {}),
        ("POST", "/v1/check_gate", {"user": user(), "gateName": "g"}),
    ]:
        response = sdk(method, path, body, key_kind="console")
        assert response["statusCode"] == 403, (path, response)
        response = sdk(method, path, body, key_kind="unknown")
        assert response["statusCode"] == 401, (path, response)


def test_sdk_routes_read_the_key_from_either_header(api: dict[str, Caller]) -> None:
    server, _ = keys.create_key("server")
    console, _ = keys.create_key("console")

    def status_with(headers: dict[str, str]) -> int:
        event = http_event("POST", "/v1/log_event", {"events": []}, key_kind=None, headers=headers)
        return int(load_function("sdk").lambda_handler(event, LAMBDA_CONTEXT)["statusCode"])

    for name in ("STATSIG-API-KEY", "statsig-api-key", "SERVICE-API-KEY"):
        assert status_with({name: server}) == 202, name
    assert status_with({"statsig-api-key": console}) == 403
    assert status_with({"statsig-api-key": "secret-nope"}) == 401
    # SERVICE-API-KEY wins when both are sent, as before.
    assert status_with({"service-api-key": server, "statsig-api-key": "secret-nope"}) == 202


# --- downloads -------------------------------------------------------------------------------------


def test_downloads(api: dict[str, Caller]) -> None:
    response = sdk("GET", SPECS_PATH)
    assert response["statusCode"] == 503, response
    evaluation = sdk("POST", "/v1/check_gate", {"user": user(), "gateName": "g"})
    assert evaluation["statusCode"] == 503, evaluation
    gate = created(api["gates"], "/console/v1/gates", {"name": "dl gate", "rules": []})
    built = rebuild()
    assert built["changed"] is True

    zipped = sdk("GET", SPECS_PATH, headers={"Accept-Encoding": "gzip, deflate"})
    assert zipped["statusCode"] == 200 and header(zipped, "Content-Encoding") == "gzip"
    doc = json.loads(gzip.decompress(body_bytes(zipped)))
    assert doc["time"] == built["time"] and doc["has_updates"] is True
    assert gate["id"] in [g["name"] for g in doc["feature_gates"]]

    plain = sdk("GET", SPECS_PATH)
    assert plain["statusCode"] == 200 and header(plain, "Content-Encoding") is None
    assert as_json(plain) == doc
    etag = header(plain, "ETag")
    zipped_etag = header(zipped, "ETag")
    assert etag and zipped_etag and etag != zipped_etag  # one ETag per representation

    assert sdk("GET", SPECS_PATH, headers={"If-None-Match": etag})["statusCode"] == 304
    not_modified = sdk("GET", SPECS_PATH, headers={"If-None-Match": zipped_etag, "Accept-Encoding": "gzip"})
    assert not_modified["statusCode"] == 304
    assert sdk("GET", SPECS_PATH, headers={"If-None-Match": zipped_etag})["statusCode"] == 200
    assert sdk("GET", SPECS_PATH, headers={"If-None-Match": '"other"'})["statusCode"] == 200
    unchanged = sdk("GET", SPECS_PATH, query=f"sinceTime={doc['time']}")
    assert as_json(unchanged) == {"has_updates": False, "time": doc["time"]}
    older = sdk("GET", SPECS_PATH, query=f"sinceTime={doc['time'] - 1}")
    assert as_json(older)["has_updates"] is True

    for bad in ("abc", "-1"):
        response = sdk("GET", SPECS_PATH, query=f"sinceTime={bad}")
        assert_bad(response["statusCode"], as_json(response), 400, "sinceTime")
    missing = sdk("GET", "/v1/download_config_specs/secret-abc")
    assert missing["statusCode"] == 404, missing

    v2 = sdk("GET", "/v2/download_config_specs/secret-abc.json")
    assert v2["statusCode"] == 200
    assert gate["id"] in as_json(v2)["feature_gates"]

    again = rebuild()  # nothing changed
    assert (again["changed"], again["time"]) == (False, doc["time"])
    assert header(sdk("GET", SPECS_PATH), "ETag") == etag

    created(api["gates"], "/console/v1/gates", {"name": "dl gate 2", "rules": []})
    moved = rebuild()
    assert moved["changed"] is True and moved["time"] > doc["time"]
    newer = as_json(sdk("GET", SPECS_PATH, query=f"sinceTime={doc['time']}"))
    assert newer["time"] == moved["time"] and len(newer["feature_gates"]) == 2


# --- id lists -------------------------------------------------------------------------------------


def test_id_lists(api: dict[str, Caller]) -> None:
    seg = created(api["segments"], "/console/v1/segments", {"name": "vips", "type": "id_list"})
    ids = [f"user-{i}" for i in range(30)]
    status, answer = api["segments"]("PATCH", f"/console/v1/segments/{seg['id']}/id_list", {"ids": ids})
    assert status == 200, answer
    created(api["segments"], "/console/v1/segments", {"name": "rules", "type": "rule_based", "rules": []})
    rebuild()

    lists = as_json(sdk("POST", "/v1/get_id_lists", {}))
    assert list(lists) == [seg["id"]]
    entry = lists[seg["id"]]
    assert entry["url"] == f"http://localhost:3000/v1/id_lists/{seg['id']}/{entry['fileID']}"
    assert entry["name"] == seg["id"] and entry["creationTime"] > 0

    path = f"/v1/id_lists/{seg['id']}/{entry['fileID']}"
    whole = sdk("GET", path)
    data = body_bytes(whole)
    assert whole["statusCode"] == 200 and entry["size"] == len(data)
    assert header(whole, "Content-Length") == str(len(data))
    lines = data.decode().splitlines()
    # id_list_hash is the SDK's (tests/unit/test_sdk_evaluator.py)
    assert sorted(lines) == sorted(f"+{id_list_hash(i)}" for i in ids)

    start = 9 * 5 + 3
    rest = sdk("GET", path, headers={"Range": f"bytes={start}-"})
    assert rest["statusCode"] == 206
    assert body_bytes(rest) == data[start:]
    assert header(rest, "Content-Length") == str(len(data) - start)
    assert header(rest, "Content-Range") == f"bytes {start}-{len(data) - 1}/{len(data)}"

    for bad in ("bytes=5-10", "items=0-", "bytes=abc-", "bytes=-5"):
        response = sdk("GET", path, headers={"Range": bad})
        assert_bad(response["statusCode"], as_json(response), 400, "Range")
    assert sdk("GET", f"/v1/id_lists/{seg['id']}/nosuchfile")["statusCode"] == 404
    for past in (len(data), len(data) + 7):  # nothing from there on: not satisfiable, as S3 answers
        beyond = sdk("GET", path, headers={"Range": f"bytes={past}-"})
        assert beyond["statusCode"] == 416, beyond
        assert header(beyond, "Content-Range") == f"bytes */{len(data)}"
        assert as_json(beyond)["status"] == 416

    status, _ = api["segments"]("PATCH", f"/console/v1/segments/{seg['id']}/id_list", {"ids": ["user-99"]})
    assert status == 200
    rebuild()
    after = as_json(sdk("POST", "/v1/get_id_lists", {}))[seg["id"]]
    assert after["fileID"] != entry["fileID"] and after["size"] == entry["size"] + 10
    added = body_bytes(sdk("GET", f"/v1/id_lists/{seg['id']}/{after['fileID']}")).decode().splitlines()
    assert f"+{id_list_hash('user-99')}" in added


def test_the_evaluator_reads_the_id_list_files_the_builder_writes(api: dict[str, Caller]) -> None:
    seg = created(api["segments"], "/console/v1/segments", {"name": "members", "type": "id_list"})
    status, answer = api["segments"](
        "PATCH", f"/console/v1/segments/{seg['id']}/id_list", {"ids": ["m-1", "m-2"]}
    )
    assert status == 200, answer
    condition = {"type": "passes_segment", "targetValue": seg["id"]}
    gate = created(
        api["gates"],
        "/console/v1/gates",
        {"name": "members only", "rules": [{"name": "in", "passPercentage": 100, "conditions": [condition]}]},
    )
    rebuild()

    def passes(unit: str) -> bool:
        response = sdk("POST", "/v1/check_gate", {"user": {"userID": unit}, "gateName": gate["id"]})
        assert response["statusCode"] == 200, response
        value: bool = as_json(response)["value"]
        return value

    assert (passes("m-1"), passes("m-2"), passes("m-3")) == (True, True, False)


# --- gates: checks from the SDKs ---------------------------------------------------------------


def test_gate_checks_fill_checks_per_hour_and_the_pass_rate_filter(api: dict[str, Caller]) -> None:
    gate = created(
        api["gates"],
        "/console/v1/gates",
        {"name": "checked", "rules": [{"name": "half", "passPercentage": 50, "conditions": []}]},
    )
    other = created(
        api["gates"],
        "/console/v1/gates",
        {"name": "unchecked", "rules": [{"name": "half", "passPercentage": 50, "conditions": []}]},
    )
    rebuild()
    checks = [
        {
            **exposure("statsig::gate_exposure", {"gate": gate["id"], "gateValue": "true", "ruleID": "r"}),
            "user": user(f"u{i}"),
        }
        for i in range(48)
    ]
    status, body = post_events(checks, gz=True)
    assert (status, body["accepted"]) == (202, 48)
    assert {line["event"] for line in stored_lines()} == {"console::gate_check"}
    _, one = api["gates"]("GET", f"/console/v1/gates/{gate['id']}")
    assert one["data"]["checksPerHour"] == 2
    status, listed = api["gates"]("GET", "/console/v1/gates")
    per_hour = {g["id"]: g["checksPerHour"] for g in listed["data"]}
    assert per_hour == {gate["id"]: 2, other["id"]: 0}
    # Every check passed: the sampled pass rate is 100 though the rule passes half.
    status, all_pass = api["gates"]("GET", "/console/v1/gates", query="passRate=100")
    assert status == 200 and [g["id"] for g in all_pass["data"]] == [gate["id"]]
    _, between = api["gates"]("GET", "/console/v1/gates", query="passRate=INBETWEEN")
    assert [g["id"] for g in between["data"]] == [other["id"]]


# --- evaluation endpoints -------------------------------------------------------------------------


def test_check_gate(api: dict[str, Caller]) -> None:
    on = created(
        api["gates"],
        "/console/v1/gates",
        {"name": "gate on", "rules": [{"name": "all", "passPercentage": 100, "conditions": []}]},
    )
    off = created(api["gates"], "/console/v1/gates", {"name": "gate off", "rules": []})
    rebuild()

    def call(body: Any) -> tuple[int, Any]:
        response = sdk("POST", "/v1/check_gate", body)
        return response["statusCode"], as_json(response)

    status, one = call({"user": user(), "gateName": on["id"]})
    assert status == 200, one
    assert (one["name"], one["value"], one["rule_id"]) == (on["id"], True, on["rules"][0]["id"])
    status, several = call({"user": user(), "gateNames": [on["id"], off["id"]]})
    assert status == 200
    assert {n: (a["value"], a["rule_id"]) for n, a in several.items()} == {
        on["id"]: (True, on["rules"][0]["id"]),
        off["id"]: (False, "default"),
    }
    assert_bad(*call({"user": user(), "gateName": on["id"], "gateNames": [off["id"]]}), 400, "gateName")
    assert_bad(*call({"user": user()}), 400, "gateName")
    status, missing = call({"user": user(), "gateName": "no_such_gate"})
    assert status == 404 and "no_such_gate" in missing["message"] and "(gateName)" in missing["message"]
    for names, field in ([["no_such_gate"], "gateNames[0]"], [[on["id"], "no_such_gate"], "gateNames[1]"]):
        status, missing = call({"user": user(), "gateNames": names})
        assert status == 404 and f"({field})" in missing["message"], missing
    assert_bad(*call({"user": {"email": "a@b.c"}, "gateName": on["id"]}), 400, "user")
    assert_bad(*call({"user": {"userID": "u", "custom": 3}, "gateName": on["id"]}), 400, "user.custom")

    checks = [line for line in stored_lines() if line["event"] == "console::gate_check"]
    assert sorted((c["metadata"]["gate"], c["metadata"]["value"]) for c in checks) == [
        (off["id"], False),
        (on["id"], True),
        (on["id"], True),
    ]
    assert all(c["user"]["userID"] == "u1" for c in checks)


def test_get_experiment_and_get_layer_log_experiment_exposures(api: dict[str, Caller]) -> None:
    layer = created(
        api["layers"],
        "/console/v1/layers",
        {
            "name": "eval layer",
            "idType": "userID",
            "parameters": [{"name": "color", "type": "string", "defaultValue": "grey"}],
        },
    )
    exp = make_experiment(api, "eval exp", layerID=layer["id"], allocation=100)
    start(api, exp["id"])
    rebuild()
    groups = {g["id"]: g["parameterValues"] for g in exp["groups"]}

    response = sdk("POST", "/v1/get_experiment", {"user": user("u7"), "experimentName": exp["id"]})
    answer = as_json(response)
    assert response["statusCode"] == 200, answer
    assert answer["rule_id"] in groups and answer["value"] == groups[answer["rule_id"]]
    assert answer["is_experiment_group"] is True
    response = sdk("POST", "/v1/get_layer", {"user": user("u7"), "layerName": layer["id"]})
    from_layer = as_json(response)
    assert response["statusCode"] == 200, from_layer
    assert (from_layer["rule_id"], from_layer["allocated_experiment_name"]) == (answer["rule_id"], exp["id"])
    assert from_layer["explicit_parameters"] == ["color"]

    exposures = [line for line in stored_lines() if line["event"] == "console::experiment_exposure"]
    assert [(e["metadata"], e["user"]["userID"]) for e in exposures] == [
        ({"experiment": exp["id"], "group": answer["rule_id"]}, "u7")
    ] * 2
    response = sdk("POST", "/v1/get_config", {"user": user(), "configName": exp["id"]})
    assert response["statusCode"] == 404  # an experiment is not a dynamic config
    response = sdk("POST", "/v1/get_layer", {"user": user(), "layerName": "no_such_layer"})
    assert response["statusCode"] == 404


def _served(doc: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((c for c in doc["dynamic_configs"] if c["name"] == name), None)


def test_the_document_follows_an_experiment_through_its_lifecycle(api: dict[str, Caller]) -> None:
    """Stored shapes as the console writes them, not hand-made: start, decide, abandon, archive."""
    decided = make_experiment(api, "to decide")
    dropped = make_experiment(api, "to abandon")
    gate = created(api["gates"], "/console/v1/gates", {"name": "held gate", "rules": []})
    holdout = created(
        api["holdouts"],
        "/console/v1/holdouts",
        {"name": "h all", "passPercentage": 5, "experimentIDs": [decided["id"]], "gateIDs": [gate["id"]]},
    )
    rebuild()
    doc = as_json(sdk("GET", SPECS_PATH))
    assert [r["id"] for r in _served(doc, decided["id"])["rules"]] == [f"holdout:{holdout['id']}", "prestart"]
    assert f"holdout:{holdout['id']}" in [g["name"] for g in doc["feature_gates"]]
    for exp in (decided, dropped):
        start(api, exp["id"])
    rebuild()
    doc = as_json(sdk("GET", SPECS_PATH))
    served = _served(doc, decided["id"])
    assert served["isActive"] is True
    assert [r["id"] for r in served["rules"]][1:] == [g["id"] for g in decided["groups"]]

    launched = decided["groups"][1]
    status, answer = api["experiments"](
        "PUT",
        f"/console/v1/experiments/{decided['id']}/make_decision",
        {"id": launched["id"], "decisionReason": "won"},
    )
    assert status == 200, answer
    status, answer = api["experiments"](
        "PUT", f"/console/v1/experiments/{dropped['id']}/abandon", {"decisionReason": "flat"}
    )
    assert status == 200, answer
    rebuild()
    doc = as_json(sdk("GET", SPECS_PATH))
    rules = _served(doc, decided["id"])["rules"]
    assert [r["id"] for r in rules] == [f"holdout:{holdout['id']}", "launchedGroup"]
    assert rules[-1]["returnValue"] == launched["parameterValues"]
    assert [r["id"] for r in _served(doc, dropped["id"])["rules"]] == ["abandoned"]

    status, answer = api["experiments"]("PUT", f"/console/v1/experiments/{dropped['id']}/archive", {})
    assert status == 200, answer
    rebuild()
    assert _served(as_json(sdk("GET", SPECS_PATH)), dropped["id"]) is None


def test_a_document_too_large_to_answer_inline_is_a_redirect_to_s3(
    api: dict[str, Caller], monkeypatch: pytest.MonkeyPatch
) -> None:
    created(api["gates"], "/console/v1/gates", {"name": "big gate", "rules": []})
    rebuild()
    monkeypatch.setattr(load_function("sdk"), "MAX_INLINE_BYTES", 10)
    response = sdk("GET", SPECS_PATH, headers={"Accept-Encoding": "gzip"})
    assert response["statusCode"] == 302, response
    location = header(response, "Location") or ""
    assert documents.V1_KEY in location and "Signature" in location
    assert sdk("GET", SPECS_PATH, query="sinceTime=9999999999999")["statusCode"] == 200  # no update: inline

    # gzip'd it fits, uncompressed (a client not accepting gzip) it would not: that one is redirected
    document = documents.current(1)
    assert document is not None
    monkeypatch.setattr(load_function("sdk"), "MAX_INLINE_BYTES", len(document.gz) + 1)
    assert sdk("GET", SPECS_PATH, headers={"Accept-Encoding": "gzip"})["statusCode"] == 200
    assert sdk("GET", SPECS_PATH)["statusCode"] == 302


def test_a_config_with_variants_as_the_console_stores_it(api: dict[str, Caller]) -> None:
    body = {
        "name": "pricing",
        "defaultValue": {"price": 10},
        "rules": [
            {
                "name": "split",
                "passPercentage": 100,
                "conditions": [],
                "returnValue": {"price": 0},
                "variants": [
                    {"name": "a", "passPercentage": 25, "returnValue": {"price": 9}},
                    {"name": "b", "passPercentage": 75, "returnValue": {"price": 11}},
                ],
            }
        ],
    }
    cfg = created(api["dynamic_configs"], "/console/v1/dynamic_configs", body)
    rebuild()
    served = _served(as_json(sdk("GET", SPECS_PATH)), cfg["id"])
    stored_rule = cfg["rules"][0]
    assert [(r["id"], r["salt"], r["returnValue"]) for r in served["rules"]] == [
        (v["id"], stored_rule["id"], v["returnValue"]) for v in stored_rule["variants"]
    ]
    answers = {}
    for i in range(40):
        response = sdk("POST", "/v1/get_config", {"user": user(f"u{i}"), "configName": cfg["id"]})
        answer = as_json(response)
        assert response["statusCode"] == 200, answer
        answers[answer["rule_id"]] = answer["value"]
    assert answers == {v["id"]: v["returnValue"] for v in stored_rule["variants"]}
