"""End-to-end tests of the metric endpoints over HTTP against the local server: create (and dry
run) every type, the definition rules per type, limits at their edges, built-ins, reads by
URL-encoded id, updates, versions, the archive states, delete and what blocks it, lists with
their filters and pagination, experiments using a metric, and auth.

The server is shared by the session, so every test makes its own metrics (unique names) and
narrows list assertions with a tag of its own. Experiments are written straight into the
server's table (the document shape the experiments service stores: `primaryMetrics:
[{name, type}]` ...), so these tests do not depend on the experiments API. Archive effects are
tested on a second server whose grace period is 0 (`METRIC_ARCHIVE_GRACE_SECONDS`).

Only what needs the server stays here (a happy path, an error, keys, concurrency, the workflows);
the validation, edge and list cases, and the whole answer of a create of each type, run in process
in `tests/functional/test_metrics_api.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import pytest
import requests

from expconsole_tools.local.process import ServeProcess
from tests.e2e.client import assert_error
from tests.functional.test_metrics_api import (
    METRICS,
    Metrics,
    body_for,
    path_of,
    uid,
)

KEY_HEADER = "SERVICE-API-KEY"


@pytest.fixture(scope="module")
def metrics(server: ServeProcess) -> Iterator[Metrics]:
    client = Metrics(server.url, server.api_key)
    yield client
    client.api.close()


def test_parallel_creates_of_one_id_make_exactly_one(metrics: Metrics) -> None:
    body = body_for("sum")

    def create(_: int) -> requests.Response:
        return requests.post(
            f"{metrics.url}{METRICS}", json=body, headers={KEY_HEADER: metrics.key}, timeout=60
        )

    with ThreadPoolExecutor(max_workers=6) as pool:
        statuses = sorted(r.status_code for r in pool.map(create, range(6)))
    assert statuses == [201] + [409] * 5


def test_ids_with_any_name_characters_are_readable(metrics: Metrics) -> None:
    name = f"Rev (usd) 50% a/b: {uid()}"
    metric = metrics.create("sum", name=name)
    assert metric["id"] == f"{name}::sum"
    assert metrics.get(metric["id"]) == metric
    resp = metrics.call("GET", f"{METRICS}/{quote(metric['id'], safe=':')}")  # colons sent as they are
    assert resp.status_code == 200 and resp.json()["data"]["id"] == metric["id"]
    via_permalink = requests.get(metric["permalink"], headers={KEY_HEADER: metrics.key}, timeout=30)
    assert via_permalink.status_code == 200 and via_permalink.json()["data"]["id"] == metric["id"]


@pytest.mark.parametrize("metric_id", ["no-separator", "::event_count", "name::", "x::mean", "x::sum"])
def test_unknown_ids_are_404(metrics: Metrics, metric_id: str) -> None:
    metric_id = metric_id.replace("x::", f"x{uid()}::")
    assert_error(metrics.call("GET", path_of(metric_id)), 404)
    assert_error(metrics.call("GET", f"{path_of(metric_id)}/versions"), 404)
    assert_error(metrics.call("GET", f"{path_of(metric_id)}/experiments"), 404)


def test_concurrent_updates_of_one_version_apply_once(metrics: Metrics) -> None:
    metric = metrics.create("sum")

    def update(i: int) -> requests.Response:
        return metrics.call("POST", path_of(metric["id"]), json={"description": f"writer {i}", "version": 1})

    with ThreadPoolExecutor(max_workers=5) as pool:
        statuses = sorted(r.status_code for r in pool.map(update, range(5)))
    assert statuses == [200] + [409] * 4
    assert metrics.get(metric["id"])["version"] == 2


# --- auth ------------------------------------------------------------------------------------------------


REQUESTS: list[tuple[str, Callable[[str], str]]] = [
    ("GET", lambda mid: METRICS),
    ("GET", lambda mid: f"{METRICS}/list"),
    ("POST", lambda mid: METRICS),
    ("GET", path_of),
    ("POST", path_of),
    ("DELETE", path_of),
    ("GET", lambda mid: f"{path_of(mid)}/versions"),
    ("PUT", lambda mid: f"{path_of(mid)}/schedule_archive"),
    ("PUT", lambda mid: f"{path_of(mid)}/cancel_archive"),
    ("PUT", lambda mid: f"{path_of(mid)}/unarchive"),
    ("GET", lambda mid: f"{path_of(mid)}/experiments"),
]


@pytest.mark.parametrize("method, path", REQUESTS, ids=[f"{m} {i}" for i, (m, _) in enumerate(REQUESTS)])
def test_every_route_needs_a_console_key(
    metrics: Metrics, server: ServeProcess, method: str, path: Callable[[str], str]
) -> None:
    metric = metrics.create("sum")
    url = metrics.url + path(metric["id"])
    body = body_for("sum") if method == "POST" else None
    missing = requests.request(method, url, json=body, timeout=30)
    assert missing.status_code == 401, missing.text
    assert isinstance(missing.json()["message"], str)
    assert_error(
        requests.request(method, url, json=body, headers={KEY_HEADER: "console-unknown"}, timeout=30), 401
    )
    assert_error(
        requests.request(method, url, json=body, headers={KEY_HEADER: server.server_secret}, timeout=30), 403
    )
    assert metrics.get(metric["id"]) == metric


def test_unrouted_method_is_405_with_allow(metrics: Metrics) -> None:
    metric = metrics.create("sum")
    resp = metrics.call("PATCH", path_of(metric["id"]), json={"description": "x"})
    assert resp.status_code == 405 and "POST" in resp.headers["Allow"]
    assert metrics.get(metric["id"]) == metric
