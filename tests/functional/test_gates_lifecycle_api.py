"""In-process tests of a gate's lifecycle actions (enable, disable, launch, archive, unarchive), its
version history and the reference lists.

The handlers are called in process (tests/functional/lambdas.py) on one moto store per module, so
every test makes its own entities (unique ids) and narrows list assertions with a tag of its own.
What needs the gateway or real concurrency (keys, raw bodies, parallel writes) stays in
`tests/e2e/test_gates_lifecycle.py`. Helpers and the `console` fixture come from the family's main
`*_api.py` module.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.functional.test_gates_api import GATES, Console, assert_error, console, country, ids_of, rule, uid

__all__ = ["console"]  # the fixture, re-exported so that pytest finds it in this module


def act(console: Console, gate_id: str, action: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    resp = console.put(f"{GATES}/{gate_id}/{action}", json=body)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


def passes(gate_id: str) -> dict[str, Any]:
    return {"type": "passes_gate", "targetValue": gate_id}


def test_launch(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country())])
    launched = act(console, gate["id"], "launch")
    assert launched["status"] == "Launched"
    assert launched["version"] == gate["version"] + 1
    assert launched["rules"] == gate["rules"]
    assert console.gate(gate["id"]) == launched
    # Enabling again brings the rules back into play.
    enabled = act(console, gate["id"], "enable")
    assert enabled["status"] == "In Progress"
    assert enabled["isEnabled"] is True


def test_full_update_of_a_launched_gate_sent_back_as_read_keeps_it_launched(console: Console) -> None:
    # Read, change the description, send the rest back as read: only the description changes.
    gate = console.create_gate(rules=[rule(50, country())])
    launched = act(console, gate["id"], "launch")
    body = {k: launched[k] for k in ("isEnabled", "description", "rules")}
    resp = console.post(f"{GATES}/{gate['id']}", json={**body, "description": "notes after launch"})
    assert resp.status_code == 200, resp.text
    updated = resp.json()["data"]
    assert updated["description"] == "notes after launch"
    assert updated["status"] == "Launched", updated
    assert updated["isEnabled"] == launched["isEnabled"]


def test_patch_of_a_launched_gate_keeps_it_launched(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country())])
    act(console, gate["id"], "launch")
    resp = console.patch(f"{GATES}/{gate['id']}", json={"description": "after launch", "tags": ["done"]})
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["status"] == "Launched"


def test_disable_after_launch_is_disabled(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country())])
    act(console, gate["id"], "launch")
    disabled = act(console, gate["id"], "disable")
    assert disabled["status"] == "Disabled"
    assert disabled["typeReason"] == "STALE_PROBABLY_UNLAUNCHED"


# --- archive, unarchive --------------------------------------------------------------------------------


def test_archive_hides_the_gate_from_lists_until_unarchived(console: Console) -> None:
    tag = f"t-{uid()}"
    gate = console.create_gate(tags=[tag], rules=[rule(50, country())])
    other = console.create_gate(tags=[tag])
    archived = act(console, gate["id"], "archive", {"archiveReason": "done with it"})
    assert archived["status"] == "Archived"
    assert archived["version"] == gate["version"] + 1
    assert console.gate(gate["id"]) == archived  # soft: still readable
    assert ids_of(console.list_gates(tags=tag)) == {other["id"]}
    assert ids_of(console.list_gates(tags=tag, includeArchived="false")) == {other["id"]}
    listed = console.list_gates(tags=tag, includeArchived="true")
    assert ids_of(listed) == {gate["id"], other["id"]}
    assert listed["pagination"]["totalItems"] == 2
    assert next(g for g in listed["data"] if g["id"] == gate["id"])["status"] == "Archived"

    unarchived = act(console, gate["id"], "unarchive")
    assert unarchived["status"] == "In Progress"
    assert unarchived["version"] == gate["version"] + 2
    assert unarchived["rules"] == gate["rules"]
    assert ids_of(console.list_gates(tags=tag)) == {gate["id"], other["id"]}


def test_archive_without_a_body(console: Console) -> None:
    gate = console.create_gate()
    resp = console.put(f"{GATES}/{gate['id']}/archive")
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["status"] == "Archived"


def test_archive_of_a_gate_another_gate_uses_needs_force(console: Console) -> None:
    used = console.create_gate(rules=[rule(50, country())])
    user = console.create_gate(rules=[rule(100, passes(used["id"]))])
    resp = console.put(f"{GATES}/{used['id']}/archive", json={})
    body = assert_error(resp, 409)
    assert user["id"] in body["message"]  # says what still uses it
    resp = console.put(f"{GATES}/{used['id']}/archive", json={"forceArchive": False})
    assert_error(resp, 409)
    assert console.gate(used["id"]) == used

    archived = act(console, used["id"], "archive", {"forceArchive": True, "archiveReason": "replaced"})
    assert archived["status"] == "Archived"
    assert console.gate(user["id"]) == user  # the referencing gate is untouched


def test_archive_with_a_bad_body_is_400(console: Console) -> None:
    gate = console.create_gate()
    assert_error(
        console.put(f"{GATES}/{gate['id']}/archive", json={"forceArchive": "yes"}), 400, "forceArchive"
    )
    assert console.gate(gate["id"]) == gate


# --- versions -------------------------------------------------------------------------------------------


def test_versions_newest_first_one_per_write(console: Console) -> None:
    gate = console.create_gate(description="v1", rules=[rule(50, country())])
    path = f"{GATES}/{gate['id']}"
    assert console.patch(path, json={"description": "v2"}).status_code == 200
    act(console, gate["id"], "disable")
    assert console.post(f"{path}/rule", json=rule(10, name="extra")).status_code == 200
    # Failed writes make no version.
    assert console.patch(path, json={"description": "stale", "version": 1}).status_code == 409
    assert console.patch(path, json={"description": "d" * 1001}).status_code == 400

    resp = console.get(f"{path}/versions")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    versions = body["data"]
    assert [v["version"] for v in versions] == [4, 3, 2, 1]
    assert body["pagination"]["totalItems"] == 4
    assert [v["description"] for v in versions] == ["v2", "v2", "v2", "v1"]
    assert [v["isEnabled"] for v in versions] == [False, False, True, True]
    assert [len(v["rules"]) for v in versions] == [2, 1, 1, 1]
    assert all(v["id"] == gate["id"] for v in versions)
    assert versions[0] == console.gate(gate["id"])
    assert versions[-1]["createdTime"] == gate["createdTime"]


def test_versions_are_paginated(console: Console) -> None:
    gate = console.create_gate(description="d0")
    path = f"{GATES}/{gate['id']}"
    for i in range(1, 4):
        assert console.patch(path, json={"description": f"d{i}"}).status_code == 200
    resp = console.get(f"{path}/versions", params={"limit": 1, "page": 2})
    assert resp.status_code == 200, resp.text
    page = resp.json()
    assert [v["version"] for v in page["data"]] == [3]
    assert page["data"][0]["description"] == "d2"
    pagination = page["pagination"]
    assert pagination["totalItems"] == 4
    assert pagination["pageNumber"] == 2
    assert pagination["itemsPerPage"] == 1
    nxt = urlsplit(pagination["nextPage"])
    assert nxt.path == f"{path}/versions"
    assert parse_qs(nxt.query) == {"page": ["3"], "limit": ["1"]}
    assert parse_qs(urlsplit(pagination["previousPage"]).query) == {"page": ["1"], "limit": ["1"]}

    seen, link = [], f"{path}/versions?limit=3"
    while link:
        data = console.get(link).json()
        seen.extend(v["version"] for v in data["data"])
        link = data["pagination"]["nextPage"]
    assert seen == [4, 3, 2, 1]


def test_versions_of_an_unknown_gate_is_404(console: Console) -> None:
    assert_error(console.get(f"{GATES}/missing_{uid()}/versions"), 404)


def test_versions_limit_above_1000_is_400(console: Console) -> None:
    gate = console.create_gate()
    assert_error(console.get(f"{GATES}/{gate['id']}/versions", params={"limit": 1001}), 400, "limit")


# --- references -----------------------------------------------------------------------------------------


def test_gate_references_lists_gates_whose_conditions_name_it(console: Console) -> None:
    target = console.create_gate(rules=[rule(50, country())])
    passing = console.create_gate(rules=[rule(100, passes(target["id"]))])
    failing = console.create_gate(
        rules=[rule(50, country()), rule(100, {"type": "fails_gate", "targetValue": target["id"]})]
    )
    console.create_gate(rules=[rule(100, country())])  # unrelated
    path = f"{GATES}/{target['id']}/gate_references"

    resp = console.get(path)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert ids_of(body) == {passing["id"], failing["id"]}
    assert body["pagination"]["totalItems"] == 2
    by_id = {g["id"]: g for g in body["data"]}
    assert by_id[passing["id"]]["rules"] == passing["rules"]  # gate-shaped records

    one = console.get(path, params={"limit": 1}).json()
    assert len(one["data"]) == 1
    assert one["pagination"]["totalItems"] == 2
    assert one["pagination"]["nextPage"] is not None
    two = console.get(one["pagination"]["nextPage"]).json()
    assert ids_of(one) | ids_of(two) == {passing["id"], failing["id"]}

    # The referencing gates have no references themselves.
    assert console.get(f"{GATES}/{passing['id']}/gate_references").json()["data"] == []


def test_gate_references_follow_rule_changes(console: Console) -> None:
    target = console.create_gate()
    user = console.create_gate(rules=[rule(100, passes(target["id"]))])
    path = f"{GATES}/{target['id']}/gate_references"
    assert ids_of(console.get(path).json()) == {user["id"]}
    assert console.patch(f"{GATES}/{user['id']}", json={"rules": [rule(100)]}).status_code == 200
    assert console.get(path).json()["data"] == []
    # With no users left, archiving needs no force.
    assert act(console, target["id"], "archive")["status"] == "Archived"


@pytest.mark.parametrize(
    "endpoint", ["gate_references", "experiment_references", "dynamic_config_references"]
)
def test_reference_limit_is_bounded_0_to_100(console: Console, endpoint: str) -> None:
    gate = console.create_gate()
    path = f"{GATES}/{gate['id']}/{endpoint}"
    for limit in (0, 1, 100):
        resp = console.get(path, params={"limit": limit})
        assert resp.status_code == 200, f"limit={limit}: {resp.text}"
        assert resp.json()["data"] == []
    for limit in (101, -1):
        assert_error(console.get(path, params={"limit": limit}), 400, "limit")


def test_reference_limit_0_returns_no_items(console: Console) -> None:
    target = console.create_gate()
    console.create_gate(rules=[rule(100, passes(target["id"]))])
    resp = console.get(f"{GATES}/{target['id']}/gate_references", params={"limit": 0})
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"] == []
    assert resp.json()["pagination"]["totalItems"] == 1


@pytest.mark.parametrize("endpoint", ["experiment_references", "dynamic_config_references"])
def test_experiment_and_config_references_of_an_unused_gate_are_empty(
    console: Console, endpoint: str
) -> None:
    gate = console.create_gate()
    resp = console.get(f"{GATES}/{gate['id']}/{endpoint}")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert isinstance(body["message"], str)
    assert body["data"] == []
    assert body["pagination"]["totalItems"] == 0
    assert body["pagination"]["nextPage"] is None


@pytest.mark.parametrize(
    "endpoint", ["gate_references", "experiment_references", "dynamic_config_references"]
)
def test_references_of_an_unknown_gate_is_404(console: Console, endpoint: str) -> None:
    assert_error(console.get(f"{GATES}/missing_{uid()}/{endpoint}"), 404)
