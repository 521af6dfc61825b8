"""End-to-end: what a new user trips on in the first hour (issue 13), through the local server.

Silent wrong answers: never-logged events named by metrics and experiments, null figures
without a reason, ignored query parameters, confidence read as a fraction, and retries counted
as new events.
"""

from __future__ import annotations

import re
import stat
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests

from expconsole_tools.local.process import ServeProcess
from tests.e2e.client import ApiClient, uid
from tests.e2e.conftest import REPO

EXPERIMENTS = "/console/v1/experiments"
HOLDOUTS = "/console/v1/holdouts"
METRICS = "/console/v1/metrics"
WEBHOOK = "/v1/webhooks/event_webhook"
EXPOSURE = "console::experiment_exposure"
GROUPS = [{"name": "Control", "id": "ctl", "size": 50}, {"name": "Test", "id": "tst", "size": 50}]


def ok(resp: requests.Response, status: int = 200) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    return resp.json()


def error(resp: requests.Response, status: int = 400) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["status"] == status and body["message"], body
    return body


def now_ms() -> int:
    return int(time.time() * 1000)


def send(server_api: ApiClient, events: list[dict[str, Any]]) -> dict[str, Any]:
    return ok(server_api.post(WEBHOOK, json=events), 202)


def event(name: str, user: str, ts: int, **metadata: Any) -> dict[str, Any]:
    return {"event": name, "user": {"userID": user}, "timestamp": ts, "metadata": metadata}


def metrics_check(experiment: dict[str, Any]) -> dict[str, Any]:
    (check,) = [c for c in experiment["healthChecks"] if c["type"] == "metrics"]
    return check


# --- never-logged events -----------------------------------------------------------------------------


def test_metric_on_a_never_logged_event_warns_with_the_closest_logged_names(
    api: ApiClient, server_api: ApiClient
) -> None:
    s = uid()
    logged = f"purchase_{s}"
    send(server_api, [event(logged, "u1", now_ms() - 1000)])

    typo = ok(
        api.post(
            METRICS, json={"name": f"rev {s}", "type": "sum", "metricEvents": [{"name": f"purchse_{s}"}]}
        ),
        201,
    )
    assert typo["data"]["id"] == f"rev {s}::sum"  # accepted: the events may simply not flow yet
    (warning,) = typo["warnings"]
    assert warning["event"] == f"purchse_{s}" and logged in warning["closest"]
    assert f"purchse_{s}" in warning["message"] and logged in warning["message"]

    fine = ok(
        api.post(METRICS, json={"name": f"rev ok {s}", "type": "sum", "metricEvents": [{"name": logged}]}),
        201,
    )
    assert fine["warnings"] == []

    # an update that names a never-logged event warns too; one back to a logged event does not
    changed = ok(api.post(f"{METRICS}/rev ok {s}::sum", json={"metricEvents": [{"name": f"nowhere_{s}"}]}))
    assert [w["event"] for w in changed["warnings"]] == [f"nowhere_{s}"]
    back = ok(api.post(f"{METRICS}/rev ok {s}::sum", json={"metricEvents": [{"name": logged}]}))
    assert back["warnings"] == []


def test_experiment_naming_a_never_logged_builtin_warns(api: ApiClient, server_api: ApiClient) -> None:
    s = uid()
    logged = f"checkout_{s}"
    send(server_api, [event(logged, "u1", now_ms() - 1000)])
    created = ok(
        api.post(
            EXPERIMENTS,
            json={
                "name": f"warn {s}",
                "primaryMetrics": [{"name": logged, "type": "event_count"}],
                "secondaryMetrics": [{"name": f"chekout_{s}", "type": "event_dau"}],
            },
        ),
        201,
    )
    (warning,) = created["warnings"]
    assert warning["field"] == "secondaryMetrics[0]" and warning["event"] == f"chekout_{s}"
    assert logged in warning["closest"]
    patched = ok(api.patch(f"{EXPERIMENTS}/{created['data']['id']}", json={"secondaryMetrics": []}))
    assert patched["warnings"] == []


def test_custom_count_metric_typed_event_count_is_told_to_use_event_count_custom(api: ApiClient) -> None:
    body = error(api.post(METRICS, json={"name": f"clicks {uid()}", "type": "event_count"}), 409)
    assert "event_count_custom" in body["message"]
    assert body["errors"][0]["field"] == "type"


def test_pulse_fails_metrics_health_for_never_logged_events_and_says_why_figures_are_null(
    api: ApiClient, server_api: ApiClient
) -> None:
    s = uid()
    buy, ghost = f"buy_{s}", f"ghost_{s}"
    exp = ok(
        api.post(
            EXPERIMENTS,
            json={
                "name": f"health {s}",
                "groups": GROUPS,
                "controlGroupID": "ctl",
                "primaryMetrics": [
                    {"name": buy, "type": "event_count"},
                    {"name": ghost, "type": "event_count"},
                ],
            },
        ),
        201,
    )["data"]
    start = ok(api.put(f"{EXPERIMENTS}/{exp['id']}/start"))["data"]["startTime"]
    events = []
    for i in range(40):
        group = "ctl" if i % 2 == 0 else "tst"
        events.append(event(EXPOSURE, f"{s}-{i}", start + 1 + i, experiment=exp["id"], group=group))
        if group == "tst":  # control never buys: its mean is 0, so the percent change is undefined
            events.append(event(buy, f"{s}-{i}", start + 100 + i))
    while now_ms() <= start + 200:
        time.sleep(0.05)
    send(server_api, events)

    ok(api.post(f"{EXPERIMENTS}/{exp['id']}/load_pulse", params={"wait": "true"}, json={}, timeout=120))
    read = ok(api.get(f"{EXPERIMENTS}/{exp['id']}"))["data"]
    check = metrics_check(read)
    assert check["status"] == "FAILED" and read["healthCheckStatus"] == "FAILED"
    assert f"{ghost}::event_count" in check["metadata"]["missingMetrics"]
    assert f"{buy}::event_count" not in check["metadata"]["missingMetrics"]

    results = ok(api.get(f"{EXPERIMENTS}/{exp['id']}/pulse_results"))["data"]  # control/test by default
    (entry,) = [e for e in results["primaryMetrics"] if e["metricID"] == f"{buy}::event_count"]
    assert entry["control_mean"] == 0 and entry["percent_change"] is None
    assert entry["reason"] and "control" in entry["reason"].lower(), entry
    assert entry["value"] is not None

    # the events arrive: the next load no longer lists the metric as missing
    send(server_api, [event(ghost, f"{s}-1", now_ms() - 10)])
    ok(api.post(f"{EXPERIMENTS}/{exp['id']}/load_pulse", params={"wait": "true"}, json={}, timeout=120))
    check = metrics_check(ok(api.get(f"{EXPERIMENTS}/{exp['id']}"))["data"])
    assert f"{ghost}::event_count" not in check["metadata"]["missingMetrics"]
    assert check["status"] != "FAILED"


# --- query parameters ----------------------------------------------------------------------------------


def test_unknown_query_parameters_are_refused_naming_them_and_the_accepted_ones(api: ApiClient) -> None:
    body = error(api.get("/console/v1/gates", params={"bogusFilter": "1"}))
    (item,) = body["errors"]
    assert item["field"] == "bogusFilter" and "limit" in item["message"] and "page" in item["message"]
    body = error(api.get(EXPERIMENTS, params={"search": "x", "limit": 5}))
    assert [e["field"] for e in body["errors"]] == ["search"]
    # a route without query parameters says it accepts none
    body = error(api.get(f"{EXPERIMENTS}/anything", params={"x": "1"}))
    assert "none" in body["errors"][0]["message"]
    # declared parameters still work
    assert ok(api.get(EXPERIMENTS, params={"limit": 1}))["pagination"]["itemsPerPage"] == 1


def test_results_options_that_are_not_parameters_and_fractional_confidence_are_400(api: ApiClient) -> None:
    exp = ok(api.post(EXPERIMENTS, json={"name": f"conf {uid()}"}), 201)["data"]
    path = f"{EXPERIMENTS}/{exp['id']}/pulse_results"
    body = error(api.get(path, params={"bonferroniCorrection": "true"}))
    assert body["errors"][0]["field"] == "bonferroniCorrection"
    body = error(api.get(path, params={"confidence": "0.99"}))
    assert body["errors"][0]["field"] == "confidence" and "percentage" in body["message"]
    assert "99" in body["message"]
    holdout = ok(api.post(HOLDOUTS, json={"name": f"conf {uid()}", "passPercentage": 10}), 201)["data"]
    body = error(api.get(f"{HOLDOUTS}/{holdout['id']}/pulse_results", params={"confidence": "0.95"}))
    assert "percentage" in body["message"]
    before = datetime.now(UTC).date().isoformat()
    empty = ok(api.get(path, params={"confidence": "99"}))["data"]
    assert empty["ds"] in {before, datetime.now(UTC).date().isoformat()}  # a day, even before any result


def test_pulse_results_default_to_control_and_the_one_other_group(api: ApiClient) -> None:
    two = ok(api.post(EXPERIMENTS, json={"name": f"pair {uid()}"}), 201)["data"]
    assert ok(api.get(f"{EXPERIMENTS}/{two['id']}/pulse_results"))["message"]
    three = ok(
        api.post(
            EXPERIMENTS,
            json={
                "name": f"three {uid()}",
                "groups": [
                    *GROUPS[:1],
                    {"name": "A", "id": "a", "size": 25},
                    {"name": "B", "id": "b", "size": 25},
                ],
            },
        ),
        201,
    )["data"]
    body = error(api.get(f"{EXPERIMENTS}/{three['id']}/pulse_results"))
    assert body["errors"][0]["field"] == "test" and "'a'" in body["message"] and "'b'" in body["message"]


# --- ingestion ---------------------------------------------------------------------------------------


def test_an_exact_retry_is_reported_as_duplicates_not_accepted(server_api: ApiClient, api: ApiClient) -> None:
    name = f"retry_{uid()}"
    batch = [event(name, f"u{i}", now_ms() - 1000 - i) for i in range(3)]
    assert send(server_api, batch) == {"success": True, "accepted": 3, "duplicates": 0}
    assert send(server_api, batch) == {"success": True, "accepted": 0, "duplicates": 3}
    summary = ok(api.get(f"/console/v1/events/{name}/summary"))["data"]
    assert summary["totalCount"] == 3


# --- finding your way ----------------------------------------------------------------------------------


def test_docs_openapi_health_and_root_need_no_key(server: Any) -> None:
    anonymous = ApiClient(server.url, "")
    page = anonymous.get("/docs", key=None)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert "/openapi.json" in page.text and "/docs/swagger-ui-bundle.js" in page.text
    assert "https://" not in page.text  # vendored files, no CDN
    bundle = anonymous.get("/docs/swagger-ui-bundle.js", key=None)
    assert bundle.status_code == 200 and "SwaggerUIBundle" in bundle.text
    assert anonymous.get("/docs/swagger-ui.css", key=None).status_code == 200

    doc = anonymous.get("/openapi.json", key=None)
    assert doc.status_code == 200
    spec = doc.json()
    assert spec["servers"][0]["url"] == server.url  # the URL the request came to
    bodies = [
        op["requestBody"]["content"]["application/json"]
        for ops in spec["paths"].values()
        for op in ops.values()
        if "requestBody" in op
    ]
    assert bodies and all("example" in body or "examples" in body for body in bodies)

    health = anonymous.get("/health", key=None)
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    root = anonymous.get("/", key=None)  # the web console, which points to both
    assert root.status_code == 200 and 'href="/docs"' in root.text and 'href="/openapi.json"' in root.text


def test_a_first_request_without_the_key_header_is_told_to_send_it(api: ApiClient) -> None:
    """No key, or the key as a Bearer token (what most APIs take): a 401 with the usual body whose
    message names SERVICE-API-KEY, from the function itself (API Gateway runs no authorizer that
    would answer a bare `{"message": "Unauthorized"}` first)."""
    missing = error(api.get("/console/v1/gates", key=None), 401)
    assert "Missing API key: send it in the SERVICE-API-KEY header" in missing["message"]
    assert missing["errors"] == [{"field": "SERVICE-API-KEY", "message": "is required"}]
    bearer = api.get("/console/v1/gates", key=None, headers={"Authorization": f"Bearer {api.key}"})
    told = error(bearer, 401)
    assert "goes in the SERVICE-API-KEY header, not Authorization" in told["message"]
    assert api.key not in bearer.text
    webhook = api.post("/v1/webhooks/event_webhook", key=None, json=[])
    assert "SERVICE-API-KEY" in error(webhook, 401)["message"]


def test_unknown_route_is_404_and_wrong_method_is_405_with_allow(api: ApiClient) -> None:
    exp = ok(api.post(EXPERIMENTS, json={"name": f"routes {uid()}"}), 201)["data"]
    wrong = api.put(f"{EXPERIMENTS}/{exp['id']}/restart_as_new", json={})
    body = error(wrong, 405)
    assert wrong.headers["Allow"] == "POST" and "use POST" in body["message"]
    missing = error(api.get("/console/v1/experimentz"), 404)
    assert "/console/v1/experiments" in missing["message"]  # the route meant
    singular = error(api.get(f"/console/v1/experiment/{exp['id']}"), 404)
    assert "Did you mean GET /console/v1/experiments/{id}?" in singular["message"]
    error(api.get("/nothing/here/at/all"), 404)
    # without a key too: the answer names no data, only routes
    anonymous = api.get("/console/v1/nope", key=None)
    assert anonymous.status_code == 404 and anonymous.json()["status"] == 404


def test_cors_allows_localhost_and_the_servers_own_origin(server: Any) -> None:
    preflight = requests.options(
        server.url + "/console/v1/gates",
        headers={
            "Origin": "http://localhost:5173",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,service-api-key",
        },
        timeout=30,
    )
    assert preflight.status_code == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == "http://localhost:5173"
    assert "service-api-key" in preflight.headers["Access-Control-Allow-Headers"]
    own = requests.get(server.url + "/health", headers={"Origin": server.url}, timeout=30)
    assert own.headers["Access-Control-Allow-Origin"] == server.url
    foreign = requests.get(server.url + "/health", headers={"Origin": "https://evil.example"}, timeout=30)
    assert "Access-Control-Allow-Origin" not in foreign.headers


def test_holdout_without_monitoring_metrics_says_so_and_ds_is_a_day(api: ApiClient) -> None:
    holdout = ok(api.post(HOLDOUTS, json={"name": f"bare {uid()}", "passPercentage": 10}), 201)["data"]
    body = ok(api.get(f"{HOLDOUTS}/{holdout['id']}/pulse_results"))
    assert "monitoringMetrics" in body["message"] and "No pulse results yet" not in body["message"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", body["data"]["ds"])


def test_holdout_load_pulse_exists_and_a_holdout_without_metrics_says_so(api: ApiClient) -> None:
    bare = ok(api.post(HOLDOUTS, json={"name": f"bare load {uid()}", "passPercentage": 10}), 201)["data"]
    body = error(api.post(f"{HOLDOUTS}/{bare['id']}/load_pulse", params={"wait": "true"}, json={}))
    assert body["errors"][0]["field"] == "monitoringMetrics"
    holdout = ok(
        api.post(
            HOLDOUTS,
            json={
                "name": f"load {uid()}",
                "passPercentage": 10,
                "monitoringMetrics": [{"name": f"seen_{uid()}", "type": "event_count"}],
            },
        ),
        201,
    )["data"]
    load = ok(
        api.post(f"{HOLDOUTS}/{holdout['id']}/load_pulse", params={"wait": "true"}, json={}, timeout=120)
    )
    assert load["data"]["finishedState"] == "success", load
    history = ok(api.get(f"{HOLDOUTS}/{holdout['id']}/pulse_load_history"))
    assert history["data"] == [load["data"]]


# --- the local server on a laptop ----------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "expconsole_tools.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_generated_keys_are_kept_in_the_data_dir_and_reused_and_can_be_deactivated(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with ServeProcess("--port", "0", "--data-dir", str(data), "--quiet", "--no-warm", cwd=REPO) as first:
        keys = (first.api_key, first.server_secret)
        assert requests.get(
            first.url + "/console/v1/gates", headers={"SERVICE-API-KEY": first.api_key}, timeout=30
        ).ok
    kept = data / "local-keys.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    with ServeProcess("--port", "0", "--data-dir", str(data), "--quiet", "--no-warm", cwd=REPO) as second:
        assert (second.api_key, second.server_secret) == keys  # printed again, not new ones
        assert any(first_key in line for line in second.banner for first_key in keys[:1])
    listed = _cli("keys", "list", "--data-dir", str(data))
    assert listed.returncode == 0, listed.stderr
    rows = [line.split()[0] for line in listed.stdout.splitlines()[1:] if line.strip()]
    assert len(rows) == 2, listed.stdout  # two restarts, still one console key and one secret
    console_id = next(line.split()[0] for line in listed.stdout.splitlines() if " console " in f" {line} ")
    done = _cli("keys", "deactivate", console_id, "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    assert _cli("keys", "deactivate", "no-such-key", "--data-dir", str(data)).returncode == 1
    with ServeProcess("--port", "0", "--data-dir", str(data), "--quiet", "--no-warm", cwd=REPO) as third:
        assert third.api_key != keys[0] and third.server_secret == keys[1]  # a new key replaces it
        refused = requests.get(
            third.url + "/console/v1/gates", headers={"SERVICE-API-KEY": keys[0]}, timeout=30
        )
        assert refused.status_code in (401, 403)
        assert requests.get(
            third.url + "/console/v1/gates", headers={"SERVICE-API-KEY": third.api_key}, timeout=30
        ).ok


def test_load_pulse_is_queued_as_in_aws_and_its_history_record_finishes(
    api: ApiClient, server_api: ApiClient
) -> None:
    s = uid()
    exp = ok(
        api.post(
            EXPERIMENTS,
            json={
                "name": f"async {s}",
                "groups": GROUPS,
                "primaryMetrics": [{"name": f"b_{s}", "type": "event_count"}],
            },
        ),
        201,
    )["data"]
    start = ok(api.put(f"{EXPERIMENTS}/{exp['id']}/start"))["data"]["startTime"]
    events = [
        event(EXPOSURE, f"{s}-{i}", start + 1 + i, experiment=exp["id"], group="ctl" if i % 2 else "tst")
        for i in range(20)
    ]
    while now_ms() <= start + 50:
        time.sleep(0.05)
    send(server_api, events)

    queued = api.post(f"{EXPERIMENTS}/{exp['id']}/load_pulse", json={})
    body = ok(queued, 202)  # accepted at once, as in AWS
    assert body["data"]["running"] is True and body["data"]["finishedState"] is None
    assert "pulse_load_history" in body["message"]
    # The history record reads as running until the load finishes: a read while it runs is
    # checked in tests/functional/test_pulse_load_records.py; here a warm pulse function may
    # finish a load this small before the first read.
    deadline = time.monotonic() + 180
    seen_running = bool(body["data"]["running"])
    while True:
        (record,) = ok(api.get(f"{EXPERIMENTS}/{exp['id']}/pulse_load_history"))["data"]
        if record["running"]:
            seen_running = True
            assert record["finishedState"] is None
        else:
            break
        assert time.monotonic() < deadline, record
        time.sleep(0.2)
    assert seen_running and record["finishedState"] == "success" and record["progress"] is None, record
    assert record["createdTime"] == body["data"]["createdTime"]  # the queued load, finished
    results = ok(api.get(f"{EXPERIMENTS}/{exp['id']}/pulse_results"))["data"]
    assert results["ds"] is not None
