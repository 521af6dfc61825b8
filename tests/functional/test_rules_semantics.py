"""What editing rules does, kind by kind: one table, every row a request on the handlers in process.

Every kind with rules edits them the same way (services.common.rules). Gates and dynamic configs
have rule endpoints (template.yaml: `/gates/{id}/rule`, `/gates/{id}/rules`,
`/gates/{id}/rules/{ruleID}`; `/dynamic_configs/{id}/rule`, `/dynamic_configs/{id}/rules`,
`/dynamic_configs/{id}/rule/{ruleId}`); segments, experiments (inline targeting) and release
pipelines (a phase's rules) take the list whole (`POST /segments/{id}/conditional`, `PATCH
/experiments/{id}`, `POST /release_pipelines/{id}`), so there adding, changing, deleting and
reordering a rule is sending the list with it added, changed, left out or moved, each rule
sent back with its `id`. A "mismatched id" is a body `id` naming another rule than the path's
(rule endpoints) or naming no rule of the entity (whole lists).

Each row starts from the same three rules `a`, `b`, `c`; `b` is the rule acted on (`a` is the
"other" rule a mismatched body id names), and the outcome is checked on the answer and on a
fresh read of what was stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.client import ApiClient, country, rule, uid

Rules = list[dict[str, Any]]

APPENDED = "200: appended after the others, with new ids"
CHANGED = "200: the fields sent changed, the rule's ids, place and other fields kept, the others as they were"
REMOVED = "200: removed, the others as they were"
REORDERED = "200: the rules in the order sent, each keeping its ids"
BODY_ID_REFUSED = "400 naming `id` and both rules' ids; nothing changes"
UNKNOWN_ID_REFUSED = "400 naming the rule's `id` as no rule of the entity; nothing changes"

# kind, operation, request, outcome
SEMANTICS: list[tuple[str, str, str, str]] = [
    ("gate", "add", "POST /gates/{id}/rule", APPENDED),
    ("gate", "add", "POST /gates/{id}/rules", APPENDED),
    ("gate", "update", "PATCH /gates/{id}/rules", CHANGED),
    ("gate", "update", "PATCH /gates/{id}/rules/{ruleID}", CHANGED),
    ("gate", "delete", "DELETE /gates/{id}/rules/{ruleID}", REMOVED),
    ("gate", "reorder", "PATCH /gates/{id}", REORDERED),
    ("gate", "reorder", "POST /gates/{id}", REORDERED),
    ("gate", "mismatched id", "PATCH /gates/{id}/rules/{ruleID}", BODY_ID_REFUSED),
    ("gate", "mismatched id", "PATCH /gates/{id}", UNKNOWN_ID_REFUSED),
    ("dynamic config", "add", "POST /dynamic_configs/{id}/rule", APPENDED),
    ("dynamic config", "add", "POST /dynamic_configs/{id}/rules", APPENDED),
    ("dynamic config", "update", "PATCH /dynamic_configs/{id}/rules", CHANGED),
    ("dynamic config", "update", "PATCH /dynamic_configs/{id}/rule/{ruleID}", CHANGED),
    ("dynamic config", "delete", "DELETE /dynamic_configs/{id}/rule/{ruleID}", REMOVED),
    ("dynamic config", "reorder", "PATCH /dynamic_configs/{id}", REORDERED),
    ("dynamic config", "reorder", "POST /dynamic_configs/{id}", REORDERED),
    ("dynamic config", "mismatched id", "PATCH /dynamic_configs/{id}/rule/{ruleID}", BODY_ID_REFUSED),
    ("dynamic config", "mismatched id", "PATCH /dynamic_configs/{id}", UNKNOWN_ID_REFUSED),
    ("segment", "add", "POST /segments/{id}/conditional", APPENDED),
    ("segment", "update", "POST /segments/{id}/conditional", CHANGED),
    ("segment", "delete", "POST /segments/{id}/conditional", REMOVED),
    ("segment", "reorder", "POST /segments/{id}/conditional", REORDERED),
    ("segment", "mismatched id", "POST /segments/{id}/conditional", UNKNOWN_ID_REFUSED),
    ("experiment", "add", "PATCH /experiments/{id}", APPENDED),
    ("experiment", "update", "PATCH /experiments/{id}", CHANGED),
    ("experiment", "delete", "PATCH /experiments/{id}", REMOVED),
    ("experiment", "reorder", "PATCH /experiments/{id}", REORDERED),
    ("experiment", "mismatched id", "PATCH /experiments/{id}", UNKNOWN_ID_REFUSED),
    ("release pipeline", "add", "POST /release_pipelines/{id}", APPENDED),
    ("release pipeline", "update", "POST /release_pipelines/{id}", CHANGED),
    ("release pipeline", "delete", "POST /release_pipelines/{id}", REMOVED),
    ("release pipeline", "reorder", "POST /release_pipelines/{id}", REORDERED),
    ("release pipeline", "mismatched id", "POST /release_pipelines/{id}", UNKNOWN_ID_REFUSED),
]

PREFIX = "/console/v1"


def _rule(name: str) -> dict[str, Any]:
    return rule(10, country("FR"), name=name)


def _phase_rule(name: str) -> dict[str, Any]:
    return {"name": name, "conditions": [country("FR")]}


@dataclass(frozen=True)
class Kind:
    """How to make an entity of the kind with rules, read them, and send them whole."""

    collection: str  # /gates
    new_rule: Callable[[str], dict[str, Any]]
    create_body: Callable[[Rules], dict[str, Any]]
    rules_of: Callable[[dict[str, Any]], Rules]  # an answer's rules
    whole_body: Callable[[dict[str, Any], Rules], Any]  # a body sending the rules whole
    field: str  # where the list is in that body

    def create(self, api: ApiClient, rules: Rules) -> dict[str, Any]:
        resp = api.post(f"{PREFIX}{self.collection}", json=self.create_body(rules))
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]

    def read(self, api: ApiClient, entity_id: str) -> dict[str, Any]:
        resp = api.get(f"{PREFIX}{self.collection}/{entity_id}")
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]


def _phase(entity: dict[str, Any], rules: Rules) -> dict[str, Any]:
    return {"phases": [{**entity["phases"][0], "rules": rules}]}


def _top_level(collection: str, label: str) -> Kind:
    """Gates and dynamic configs: the rules top-level; a full update also needs these two fields."""
    return Kind(
        collection,
        _rule,
        lambda rules: {"name": f"{label} {uid()}", "rules": rules},
        lambda data: data["rules"],
        lambda entity, rules: {"isEnabled": True, "description": "", "rules": rules},
        "rules",
    )


KINDS = {
    "gate": _top_level("/gates", "gate"),
    "dynamic config": _top_level("/dynamic_configs", "config"),
    "segment": Kind(
        "/segments",
        _rule,
        lambda rules: {"name": f"segment {uid()}", "type": "rule_based", "rules": rules},
        lambda data: data["rules"],
        lambda entity, rules: rules,
        "",
    ),
    "experiment": Kind(
        "/experiments",
        _rule,
        lambda rules: {"name": f"experiment {uid()}", "inlineTargetingRules": rules},
        lambda data: data["inlineTargetingRules"],
        lambda entity, rules: {"inlineTargetingRules": rules},
        "inlineTargetingRules",
    ),
    "release pipeline": Kind(
        "/release_pipelines",
        _phase_rule,
        lambda rules: {
            "name": f"pipeline {uid()}",
            "phases": [{"name": "first", "timeIntervalMs": 0, "requiredReview": False, "rules": rules}],
        },
        lambda data: data["phases"][0]["rules"],
        _phase,
        "phases[0].rules",
    ),
}


def _whole_list(operation: str, before: Rules, new: dict[str, Any]) -> Rules:
    """The list a kind without rule endpoints is sent, for the operation on rule `b`."""
    a, b, c = before
    return {
        "add": [a, b, c, new],
        "update": [a, {**b, "name": "renamed"}, c],
        "delete": [a, c],
        "reorder": [c, b, a],
        "mismatched id": [{**a, "id": "no_such_rule"}, b, c],
    }[operation]


def _rule_endpoint_body(operation: str, route: str, before: Rules, new: dict[str, Any]) -> Any:
    """The body of a rule endpoint, for the operation on rule `b`."""
    a, b, _ = before
    if operation == "add":
        return new if route.endswith("/rule") else {"rules": [new]}
    if operation == "update" and route.endswith("/rules"):
        return {"rules": [{"id": b["id"], "name": "renamed"}]}
    if operation == "update":
        return {"name": "renamed"}
    if operation == "mismatched id":
        return {"id": a["id"], "name": "renamed"}
    return None  # delete


@pytest.mark.parametrize(
    ("kind", "operation", "route", "outcome"),
    SEMANTICS,
    ids=[
        f"{kind}-{operation}-{route.split()[0]}-{route.split('}', 1)[1] or 'entity'}"
        for kind, operation, route, _ in SEMANTICS
    ],
)
def test_rule_edit_semantics(api: ApiClient, kind: str, operation: str, route: str, outcome: str) -> None:
    k = KINDS[kind]
    entity = k.create(api, [k.new_rule("a"), k.new_rule("b"), k.new_rule("c")])
    before = k.rules_of(entity)
    assert [r["name"] for r in before] == ["a", "b", "c"]
    a, b, c = before
    new = k.new_rule("new")
    method, template = route.split()
    path = PREFIX + template.format(id=entity["id"], ruleID=b["id"])
    if template == f"{k.collection}/{{id}}" or template.endswith("/conditional"):
        body = k.whole_body(entity, _whole_list(operation, before, new))
    else:
        body = _rule_endpoint_body(operation, template, before, new)

    resp = api.call(method, path, json=body)

    stored = k.read(api, entity["id"])
    after = k.rules_of(stored)
    if outcome in (BODY_ID_REFUSED, UNKNOWN_ID_REFUSED):
        assert resp.status_code == 400, resp.text
        error = resp.json()["errors"][0]
        if outcome == BODY_ID_REFUSED:
            assert error["field"] == "id"
            assert a["id"] in error["message"] and b["id"] in error["message"], error
        else:
            assert error["field"] == (f"{k.field}[0].id" if k.field else "[0].id")
            assert "no rule with id 'no_such_rule'" in error["message"], error
        assert after == before and stored["version"] == entity["version"]
        return
    assert resp.status_code == 200, resp.text
    assert k.rules_of(resp.json()["data"]) == after  # the answer is what was stored
    assert stored["version"] == entity["version"] + 1
    if outcome == APPENDED:
        assert after[:3] == before
        added = after[3]
        assert added["name"] == "new" and added["conditions"] == [country("FR")]
        assert added["id"] not in {r["id"] for r in before}
        assert added.get("baseID", added["id"]) == added["id"]
    elif outcome == CHANGED:
        assert [after[0], after[2]] == [a, c]
        assert after[1] == {**b, "name": "renamed"}
    elif outcome == REMOVED:
        assert after == [a, c]
    else:
        assert outcome == REORDERED
        assert after == [c, b, a]
