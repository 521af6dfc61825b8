"""Schemathesis against openapi.json through the local server: every route, positive and negative
examples, no 5xx, and every answer documented (status code, content type and body schema).

One pytest item per operation (`test_api[GET /console/v1/gates/{id}]`), so `pytest -n auto`
spreads them over the workers; each worker runs an `expconsole serve --ephemeral` of this
module's own, apart from the session server the other end-to-end tests share (fuzzing creates,
archives and deletes at random).

Per operation, Schemathesis runs its coverage cases (schema-driven and deterministic: each
field's boundaries, wrong types, missing required fields and unknown ones, unexpected methods,
a missing key) and then `EXPCONSOLE_FUZZ_EXAMPLES` generated cases, positive and negative
(default below). Generation is derandomized and the example database is off, so every run sends
the same inputs and a failure reproduces with the same command; raise the budget locally to dig
deeper (`EXPCONSOLE_FUZZ_EXAMPLES=300 pytest -n auto tests/e2e/test_fuzz_openapi.py`).

Random ids mostly meet 404s, so before each operation the entities its path names are created
(a gate with a rule, a setup and an active experiment, a metric, an archived entity for
`unarchive`, ...) and the `flatmap_path_parameters` hook draws each path parameter from those
ids or the generated value. A failure prints the case as a curl command; the server's log,
handler tracebacks included, is in the test's captured stderr.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from expconsole_tools.local.process import ServeProcess

REPO = Path(__file__).resolve().parents[2]
KEY_HEADER = "SERVICE-API-KEY"
CONSOLE = "/console/v1"
INGEST = "/v1/webhooks/event_webhook"
# Generated cases per operation, on top of the coverage cases (which already send each field's
# boundaries, wrong types, missing and unknown fields, and a missing key to every route). 10 keeps
# a random positive and negative pass over each of the 137 operations within the suite's budget;
# raise it to dig deeper (the module docstring says how).
MAX_EXAMPLES = int(os.environ.get("EXPCONSOLE_FUZZ_EXAMPLES", "10"))
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance, content_type_conformance]

schema = schemathesis.openapi.from_path(REPO / "openapi.json")
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])

# Path parameter name -> ids that exist for the operation under test (set by the `seeded` fixture).
SEEDED: dict[str, list[str]] = {}


@schema.hook
def flatmap_path_parameters(context: Any, path_parameters: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Each path parameter: one of the ids seeded for this operation, or the generated value."""
    if not isinstance(path_parameters, dict) or not any(SEEDED.get(name) for name in path_parameters):
        return st.just(path_parameters)
    return st.fixed_dictionaries(
        {
            name: st.sampled_from([*SEEDED[name], value]) if SEEDED.get(name) else st.just(value)
            for name, value in path_parameters.items()
        }
    )


class Seeder:
    """Creates, with fresh ids, the entities an operation's path parameters can name."""

    RULE = {"name": "beta", "passPercentage": 10, "conditions": []}
    ID_MAPPING = [{"serviceUnitID": "userID", "column": "user_id"}]

    def __init__(self, server: ServeProcess) -> None:
        self.server = server
        self.session = requests.Session()
        self.counter = itertools.count()

    def call(self, method: str, path: str, body: Any = None, *, key: str | None = None) -> dict[str, Any]:
        headers = {KEY_HEADER: key or self.server.api_key}
        resp = self.session.request(method, self.server.url + path, json=body, headers=headers, timeout=60)
        assert resp.status_code in (200, 201, 202), f"seeding {method} {path}: {resp.status_code} {resp.text}"
        return resp.json()

    def create(self, group: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("POST", f"{CONSOLE}/{group}", body)["data"]

    def seeds_for(self, path: str) -> dict[str, list[str]]:
        """Ids for the path parameters of `path` (an OpenAPI path template)."""
        n = next(self.counter)
        for prefix, make in self._makers().items():
            if path.startswith(f"{CONSOLE}/{prefix}/"):
                seeds = make(n)
                break
        else:
            return {}
        group, action = path.split("/")[3], path.rsplit("/", 1)[-1]
        if group == "metrics" and action in ("cancel_archive", "unarchive"):
            # Archived only after a day's grace: the closest state a run can reach.
            self.call("PUT", f"{CONSOLE}/metrics/{seeds['id'][0]}/schedule_archive")
        elif action == "unarchive":
            self.call("PUT", f"{CONSOLE}/{group}/{seeds['id'][0]}/archive", {})
        return seeds

    def _makers(self) -> dict[str, Callable[[int], dict[str, list[str]]]]:
        # Longest prefixes first: `experiments/qualifying_events/` before `experiments/`.
        return {
            "experiments/assignment_source": self._assignment_source,
            "experiments/qualifying_events": self._qualifying_events,
            "experiments": self._experiments,
            "gates": self._gate,
            "dynamic_configs": self._dynamic_config,
            "metrics": self._metric,
            "holdouts": lambda n: {"id": [self.create("holdouts", {"name": f"fuzz holdout {n}"})["id"]]},
            "layers": lambda n: {
                "id": [self.create("layers", {"name": f"fuzz layer {n}", "idType": "userID"})["id"]]
            },
            "prompts": lambda n: {"id": [self.create("prompts", {"name": f"fuzz prompt {n}"})["id"]]},
            "release_pipelines": self._release_pipeline,
            "segments": self._segments,
            "events": self._event,
        }

    def _gate(self, n: int) -> dict[str, list[str]]:
        gate = self.create("gates", {"name": f"fuzz gate {n}", "rules": [self.RULE]})
        return {"id": [gate["id"]], "ruleID": [gate["rules"][0]["id"]]}

    def _dynamic_config(self, n: int) -> dict[str, list[str]]:
        body = {"name": f"fuzz config {n}", "rules": [{**self.RULE, "returnValue": {"on": True}}]}
        config = self.create("dynamic_configs", body)
        return {"id": [config["id"]], "ruleId": [config["rules"][0]["id"]]}

    def _experiments(self, n: int) -> dict[str, list[str]]:
        setup = self.create("experiments", {"name": f"fuzz exp {n}", "hypothesis": "it helps"})
        active = self.create("experiments", {"name": f"fuzz active exp {n}"})
        self.call("PUT", f"{CONSOLE}/experiments/{active['id']}/start", {})
        return {"id": [setup["id"], active["id"]]}

    def _metric(self, n: int) -> dict[str, list[str]]:
        body = {"name": f"fuzz_metric_{n}", "type": "sum", "metricEvents": [{"name": "purchase"}]}
        return {"id": [self.create("metrics", body)["id"], "purchase::event_count"]}

    def _release_pipeline(self, n: int) -> dict[str, list[str]]:
        phase = {
            "name": "first",
            "timeIntervalMs": 0,
            "requiredReview": False,
            "rules": [{"name": "everyone", "conditions": []}],
        }
        pipeline = self.create("release_pipelines", {"name": f"fuzz pipeline {n}", "phases": [phase]})
        return {"id": [pipeline["id"]]}

    def _segments(self, n: int) -> dict[str, list[str]]:
        id_list = self.create("segments", {"name": f"fuzz ids {n}", "type": "id_list"})
        rule_based = self.create("segments", {"name": f"fuzz rules {n}", "type": "rule_based"})
        return {"id": [id_list["id"], rule_based["id"]]}

    def _assignment_source(self, n: int) -> dict[str, list[str]]:
        body = {
            "name": f"fuzz_as_{n}",
            "sql": "SELECT user_id, ts, experiment_id, group_id FROM analytics.exposures",
            "timestampColumn": "ts",
            "experimentIDColumn": "experiment_id",
            "groupIDColumn": "group_id",
            "idTypeMapping": self.ID_MAPPING,
        }
        return {"name": [self.create("experiments/assignment_sources", body)["name"]]}

    def _qualifying_events(self, n: int) -> dict[str, list[str]]:
        body = {
            "name": f"fuzz_qe_{n}",
            "sql": "SELECT user_id, ts FROM analytics.events",
            "timestampColumn": "ts",
            "idTypeMapping": self.ID_MAPPING,
        }
        return {"name": [self.create("experiments/qualifying_events", body)["name"]]}

    def _event(self, n: int) -> dict[str, list[str]]:
        name = f"fuzz_event_{n}"
        event = {"event": name, "user": {"userID": "u-1"}, "metadata": {"sku": "a"}}
        self.call("POST", INGEST, [event], key=self.server.server_secret)
        return {"eventName": [name]}


@pytest.fixture(scope="module")
def fuzz_server() -> Iterator[ServeProcess]:
    with ServeProcess("--ephemeral", "--port", "0", "--no-warm", cwd=REPO) as process:
        yield process


@pytest.fixture(scope="module")
def seeder(fuzz_server: ServeProcess) -> Iterator[Seeder]:
    seeder = Seeder(fuzz_server)
    yield seeder
    seeder.session.close()


@pytest.fixture
def seeded(request: pytest.FixtureRequest, seeder: Seeder) -> Iterator[None]:
    """Entities for the operation under test, which the node id names: `test_api[GET /path]`."""
    match = re.search(r"\[[A-Z]+ ([^\]]+)\]$", request.node.name)
    SEEDED.clear()
    if match:
        SEEDED.update(seeder.seeds_for(match.group(1)))
    yield
    SEEDED.clear()


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)
def test_api(case: schemathesis.Case, fuzz_server: ServeProcess, seeded: None) -> None:
    # Ingestion and the SDK protocol (/v1, /v2) take a server secret; the console a console key.
    key = fuzz_server.api_key if case.path.startswith("/console/") else fuzz_server.server_secret
    case.call_and_validate(base_url=fuzz_server.url, headers={KEY_HEADER: key}, checks=CHECKS)
