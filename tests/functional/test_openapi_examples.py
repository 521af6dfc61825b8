"""Every request body example in openapi.json, sent as is to the routes, succeeds.

The examples tell one story (expconsole.models.base): events, segments, metrics and a release
pipeline; a gate naming the segment; a dynamic config, a layer, a prompt, warehouse sources and a
holdout; an experiment naming the gate, the layer and the metrics, which the holdout then holds
out; the experiment's life from its scheduled start to the decision, its archive and its restart;
the SDK's evaluations and events; and archiving last, once nothing active names what is archived.
The test sends them in that order through the functions' handlers as template.yaml routes them
(Powertools' validation included), on one moto store, and expects a 2xx for each.

Path parameters are the ids the examples created, read from the answers (a release pipeline's id
is drawn at random); a rule path names the entity's first rule. Where an operation needs a state,
other examples arrange it: make_decision follows the start example; the abandoned experiment is
the one restart_as_new created, started by the start example. The one change made to a body: a
rule's `id`, which the service draws at random, becomes the id of the stored rule of the same name.

The document is the one the docs function serves (time fields set from the clock, as a user gets
it at /docs), and each example is checked against its body's schema there before it is sent. The
test fails when an operation with a request body is not sent: a new route gets its example on its
model (tests/unit/test_openapi.py checks there is one) and its place here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import jsonschema
import pytest

from expconsole.store import s3
from expconsole_tools.openapi import examples_of
from tests.conftest import LAMBDA_CONTEXT, http_event, load_function
from tests.e2e.client import ApiClient

CONSOLE = "/console/v1"
EXPERIMENTS = f"{CONSOLE}/experiments"


def served_document() -> dict[str, Any]:
    """/openapi.json as the docs function answers it (API Gateway's route key for it)."""
    event = http_event("GET", "/openapi.json", key_kind=None)
    event["routeKey"] = "GET /openapi.json"
    answer = load_function("docs").lambda_handler(event, LAMBDA_CONTEXT)
    assert answer["statusCode"] == 200, answer
    return json.loads(answer["body"])


def with_bodies(doc: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (method.upper(), path)
        for path, operations in doc["paths"].items()
        for method, operation in operations.items()
        if "application/json" in (operation.get("requestBody") or {}).get("content", {})
    }


class Story:
    """Sends each operation's examples, in order, and remembers which operations it sent."""

    def __init__(self, api: ApiClient, server: ApiClient, doc: dict[str, Any]) -> None:
        self.api, self.server, self.doc = api, server, doc
        self.sent: set[tuple[str, str]] = set()

    def send(self, method: str, template: str, **params: str) -> list[Any]:
        """Each example of `method template` to the path with `params`; the answers' `data`."""
        content = self.doc["paths"][template][method.lower()]["requestBody"]["content"]["application/json"]
        path = template.format(**{name: quote(value, safe="") for name, value in params.items()})
        client = self.api if template.startswith(CONSOLE) else self.server
        out = []
        schema = {**content["schema"], "components": self.doc["components"]}
        for name, example in examples_of(content):
            jsonschema.validate(example, schema)  # as served: time fields set from the clock
            body = self.with_rule_ids(path, example)
            resp = client.request(method, path, json=body)
            assert 200 <= resp.status_code < 300, (
                f"{method} {template} ({name}), sent to {path}: {resp.status_code} {resp.text}"
            )
            answer = resp.json()
            out.append(answer.get("data", answer) if isinstance(answer, dict) else answer)
        self.sent.add((method, template))
        return out

    def with_rule_ids(self, path: str, body: Any) -> Any:
        """A rules update's `id`s replaced by those of the stored rules of the same names."""
        rules = body.get("rules") if isinstance(body, dict) else None
        if not rules or not any("id" in rule for rule in rules):
            return body
        stored = {r["name"]: r["id"] for r in self.get(path.removesuffix("/rules"))["rules"]}
        for rule in rules:
            assert rule.get("name") in stored, (
                f"{path}: the example names no stored rule {rule.get('name')!r}"
            )
        return {**body, "rules": [{**rule, "id": stored[rule["name"]]} for rule in rules]}

    def get(self, path: str) -> dict[str, Any]:
        resp = self.api.get(path)
        assert resp.status_code == 200, resp.text
        data: dict[str, Any] = resp.json()["data"]
        return data

    def first_rule(self, path: str) -> str:
        rule_id: str = self.get(path)["rules"][0]["id"]
        return rule_id


@pytest.fixture
def story(app_api: ApiClient, app_ingest: ApiClient) -> Iterator[Story]:
    s3.create_bucket()
    yield Story(app_api, app_ingest, served_document())


def rebuild_specs() -> None:
    """What the table's stream does after writes: the specs function builds the SDKs' document."""
    load_function("specs").lambda_handler({"Records": [{"eventName": "MODIFY"}]}, LAMBDA_CONTEXT)


def test_every_example_body_is_accepted_in_story_order(story: Story) -> None:
    send = story.send

    # What everything else names: events, segments, metrics, a release pipeline.
    send("POST", "/v1/webhooks/event_webhook")
    id_list, rule_based = (s["id"] for s in send("POST", f"{CONSOLE}/segments"))
    send("PATCH", f"{CONSOLE}/segments/{{id}}/id_list", id=id_list)
    send("POST", f"{CONSOLE}/segments/{{id}}/conditional", id=rule_based)
    metric = send("POST", f"{CONSOLE}/metrics")[0]["id"]
    send("POST", f"{CONSOLE}/metrics/{{id}}", id=metric)
    [pipeline] = (p["id"] for p in send("POST", f"{CONSOLE}/release_pipelines"))
    send("POST", f"{CONSOLE}/release_pipelines/{{id}}", id=pipeline)

    # A gate (its rules name the id-list segment), then its rules, a partial and a full update
    # (the full update launches it to everyone: no rule names the segment any more).
    [gate] = (g["id"] for g in send("POST", f"{CONSOLE}/gates"))
    send("POST", f"{CONSOLE}/gates/{{id}}/rule", id=gate)
    send("POST", f"{CONSOLE}/gates/{{id}}/rules", id=gate)
    send("PATCH", f"{CONSOLE}/gates/{{id}}/rules", id=gate)
    rule = story.first_rule(f"{CONSOLE}/gates/{gate}")
    send("PATCH", f"{CONSOLE}/gates/{{id}}/rules/{{ruleID}}", id=gate, ruleID=rule)
    send("PATCH", f"{CONSOLE}/gates/{{id}}", id=gate)
    send("POST", f"{CONSOLE}/gates/{{id}}", id=gate)

    # A dynamic config in the same order; a layer, a prompt and warehouse sources.
    [config] = (c["id"] for c in send("POST", f"{CONSOLE}/dynamic_configs"))
    send("POST", f"{CONSOLE}/dynamic_configs/{{id}}/rule", id=config)
    send("POST", f"{CONSOLE}/dynamic_configs/{{id}}/rules", id=config)
    send("PATCH", f"{CONSOLE}/dynamic_configs/{{id}}/rules", id=config)
    rule = story.first_rule(f"{CONSOLE}/dynamic_configs/{config}")
    send("PATCH", f"{CONSOLE}/dynamic_configs/{{id}}/rule/{{ruleId}}", id=config, ruleId=rule)
    send("PATCH", f"{CONSOLE}/dynamic_configs/{{id}}", id=config)
    send("POST", f"{CONSOLE}/dynamic_configs/{{id}}", id=config)
    [layer] = (x["id"] for x in send("POST", f"{CONSOLE}/layers"))
    send("PATCH", f"{CONSOLE}/layers/{{id}}", id=layer)
    send("POST", f"{CONSOLE}/layers/{{id}}", id=layer)
    [prompt] = (x["id"] for x in send("POST", f"{CONSOLE}/prompts"))
    send("PATCH", f"{CONSOLE}/prompts/{{id}}", id=prompt)
    [qualifying] = (x["name"] for x in send("POST", f"{EXPERIMENTS}/qualifying_events"))
    send("POST", f"{EXPERIMENTS}/qualifying_events/{{name}}", name=qualifying)
    [assignments] = (x["name"] for x in send("POST", f"{EXPERIMENTS}/assignment_sources"))
    send("POST", f"{EXPERIMENTS}/assignment_source/{{name}}", name=assignments)
    send("PATCH", f"{EXPERIMENTS}/assignment_source/{{name}}", name=assignments)

    # The experiment (it names the gate, the layer and the metrics), designed in setup; the
    # holdout, whose full update holds the experiment out.
    [holdout] = (x["id"] for x in send("POST", f"{CONSOLE}/holdouts"))
    [experiment] = (x["id"] for x in send("POST", EXPERIMENTS))
    send("PATCH", f"{EXPERIMENTS}/{{id}}", id=experiment)
    send("POST", f"{EXPERIMENTS}/{{id}}", id=experiment)
    send("POST", f"{CONSOLE}/holdouts/{{id}}", id=holdout)
    send("PATCH", f"{CONSOLE}/holdouts/{{id}}", id=holdout)

    # Its run: scheduled, started at once, a group paused and resumed.
    send("POST", f"{EXPERIMENTS}/{{id}}/schedule_start", id=experiment)
    send("PUT", f"{EXPERIMENTS}/{{id}}/start", id=experiment)
    send("POST", f"{EXPERIMENTS}/{{id}}/disable_groups", id=experiment)
    send("POST", f"{EXPERIMENTS}/{{id}}/enable_groups", id=experiment)

    # The SDKs' side, once the specs function has built their document: evaluations, events.
    rebuild_specs()
    for route in ("check_gate", "get_config", "get_experiment", "get_layer"):
        send("POST", f"/v1/{route}")
    [logged] = send("POST", "/v1/log_event")
    assert logged["skipped"] == [] and logged["accepted"] > 0, logged  # stored, not just answered
    send("POST", "/v1/sdk_exception")

    # Results, the decision, the archive and back, a restart, and the restart abandoned.
    send("POST", f"{EXPERIMENTS}/{{id}}/load_pulse", id=experiment)
    send("POST", f"{CONSOLE}/holdouts/{{id}}/load_pulse", id=holdout)
    send("PUT", f"{EXPERIMENTS}/{{id}}/make_decision", id=experiment)
    send("PUT", f"{EXPERIMENTS}/{{id}}/archive", id=experiment)
    send("PUT", f"{EXPERIMENTS}/{{id}}/unarchive", id=experiment)
    [restarted] = (x["id"] for x in send("POST", f"{EXPERIMENTS}/{{id}}/restart_as_new", id=experiment))
    send("PUT", f"{EXPERIMENTS}/{{id}}/start", id=restarted)
    send("PUT", f"{EXPERIMENTS}/{{id}}/abandon", id=restarted)

    # Archived and back, now that nothing active names them (the decision dropped the targeting
    # gate; the gate's full update dropped the segment).
    send("DELETE", f"{CONSOLE}/segments/{{id}}/id_list", id=id_list)
    for group, entity in (
        ("gates", gate),
        ("dynamic_configs", config),
        ("holdouts", holdout),
        ("prompts", prompt),
        ("release_pipelines", pipeline),
        ("segments", id_list),
    ):
        send("PUT", f"{CONSOLE}/{group}/{{id}}/archive", id=entity)
        if group != "segments":
            send("PUT", f"{CONSOLE}/{group}/{{id}}/unarchive", id=entity)

    missing = with_bodies(story.doc) - story.sent
    assert not missing, f"operations whose examples this story never sends: {sorted(missing)}"
