"""The route a 404 suggests: the nearest route segment by segment (functions/docs, which API Gateway
sends every request no route matches), over the API's real routes (the committed openapi.json)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import load_function

docs = load_function("docs")

NEAREST = [
    # (method, wrong path, the route it should suggest)
    ("GET", "/console/v1/experiment/5xKz1fA2", "/console/v1/experiments/{id}"),  # singular
    ("GET", "/console/v1/experiment/assignment_sources", "/console/v1/experiments/assignment_sources"),
    ("GET", "/console/v1/gate/my_gate", "/console/v1/gates/{id}"),
    ("GET", "/console/v1/gates/my_gate/rule", "/console/v1/gates/{id}/rules"),  # a POST route's path
    ("PATCH", "/console/v1/gates/my_gate/rule/r1", "/console/v1/gates/{id}/rules/{ruleID}"),
    ("GET", "/console/v1/dynamicconfigs", "/console/v1/dynamic_configs"),  # `_` left out
    ("GET", "/console/v1/dynamic-configs/dc1", "/console/v1/dynamic_configs/{id}"),
    ("GET", "/v1/download_config_spec/secret-abc.json", "/v1/download_config_specs/{file}"),
    ("GET", "/console/v1/experimentz", "/console/v1/experiments"),
    ("GET", "/console/v1/Segments", "/console/v1/segments"),
    ("GET", "/console/v1/metric/m1/experiment", "/console/v1/metrics/{id}/experiments"),
    ("GET", "/console/v1/experiments/e1/pulse", "/console/v1/experiments/{id}/pulse_results"),  # shortened
    ("PUT", "/console/v1/gates/g1/enabled", "/console/v1/gates/{id}/enable"),
    ("POST", "/v1/log_events", "/v1/log_event"),
    ("GET", "/console/v2/gates", "/console/v1/gates"),
    ("GET", "/console/v1/release_pipeline", "/console/v1/release_pipelines"),
    ("GET", "/console/v1/holdout/h1/pulse_result", "/console/v1/holdouts/{id}/pulse_results"),
]

FAR = [
    ("GET", "/nothing/here/at/all"),
    ("GET", "/console/v1/nope"),
    ("GET", "/console/v1/gates/g1/rules/r1/extra/more"),
    ("GET", "/console"),
    ("DELETE", "/wp-admin/setup.php"),
]


@pytest.mark.parametrize(("method", "path", "meant"), NEAREST, ids=[f"{m} {p}" for m, p, _ in NEAREST])
def test_a_near_miss_suggests_the_route_meant(method: str, path: str, meant: str) -> None:
    routes = docs._routes()
    assert meant in routes, f"{meant} is not a route: the table is stale"
    assert docs.nearest(method, path, routes) == meant


@pytest.mark.parametrize(("method", "path"), FAR, ids=[f"{m} {p}" for m, p in FAR])
def test_a_path_like_no_route_suggests_none(method: str, path: str) -> None:
    assert docs.nearest(method, path, docs._routes()) is None


def _answer(method: str, path: str) -> tuple[int, str]:
    response = docs._unrouted(method, path)
    return response["statusCode"], json.loads(response["body"])["message"]


def test_the_404_names_the_route_with_the_method_asked() -> None:
    assert _answer("GET", "/console/v1/experiment/5xKz1fA2") == (
        404,
        "No route for GET /console/v1/experiment/5xKz1fA2. Did you mean GET /console/v1/experiments/{id}? "
        "Every route: /docs (interactive) or /openapi.json.",
    )
    # A route that does not take the method is suggested with the methods it takes.
    status, message = _answer("DELETE", "/console/v1/experiment/e1/start")
    assert status == 404 and "Did you mean PUT /console/v1/experiments/{id}/start?" in message


def test_a_405_also_suggests_the_near_route_that_takes_the_method() -> None:
    status, message = _answer("GET", "/console/v1/gates/g1/rule")
    assert status == 405
    assert message == (
        "GET is not allowed on /console/v1/gates/g1/rule: use POST, "
        "or did you mean GET /console/v1/gates/{id}/rules?"
    )
    status, message = _answer("PUT", "/console/v1/gates")
    assert (status, message) == (405, "PUT is not allowed on /console/v1/gates: use one of GET, POST.")
