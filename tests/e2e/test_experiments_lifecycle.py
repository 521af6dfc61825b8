"""End-to-end tests of an experiment's lifecycle: every legal and illegal move of the state
machine, what each move sets, scheduled starts, group disabling, restart as new, the fields
that lock once an experiment has started, and the quality score with hand-computed numbers.

Helpers and the `console` fixture come from `test_experiments.py` beside this file.

Only what needs the server stays here (a happy path, an error, keys, concurrency, the workflows);
the validation, edge and list cases run in process in
`tests/functional/test_experiments_lifecycle_api.py`.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from test_experiments import console

from tests.e2e.client import assert_error, uid
from tests.functional.test_experiments_api import EXPERIMENTS, Console, metric
from tests.functional.test_experiments_lifecycle_api import LOCKED, future_ms, in_state

__all__ = ["console"]  # the fixture, re-exported so that pytest finds it in this module


# action -> (method, body); the body is valid, so only the state decides the answer.
ACTIONS: dict[str, tuple[str, Any]] = {
    "start": ("PUT", None),
    "schedule_start": ("POST", "FUTURE"),
    "make_decision": ("PUT", {"id": "a", "decisionReason": "A wins"}),
    "abandon": ("PUT", {"decisionReason": "no effect"}),
    "reset": ("PUT", None),
    "archive": ("PUT", {"archiveReason": "done"}),
    "unarchive": ("PUT", None),
    "restart_as_new": ("POST", "NAME"),
    "disable_groups": ("POST", {"group_names": ["B"]}),
    "enable_groups": ("POST", {"group_names": ["B"]}),
}
STATES = ("setup", "active", "decision_made", "abandoned", "archived")
# The state machine, written out independently of the service: the state each legal move leads to.
LEGAL: dict[tuple[str, str], str] = {
    ("setup", "start"): "active",
    ("setup", "schedule_start"): "setup",
    ("setup", "archive"): "archived",
    ("setup", "disable_groups"): "setup",
    ("setup", "enable_groups"): "setup",
    ("active", "make_decision"): "decision_made",
    ("active", "abandon"): "abandoned",
    ("active", "reset"): "setup",
    ("active", "restart_as_new"): "active",
    ("active", "disable_groups"): "active",
    ("active", "enable_groups"): "active",
    ("decision_made", "reset"): "setup",
    ("decision_made", "archive"): "archived",
    ("decision_made", "restart_as_new"): "decision_made",
    ("abandoned", "reset"): "setup",
    ("abandoned", "archive"): "archived",
    ("abandoned", "restart_as_new"): "abandoned",
    ("archived", "unarchive"): "setup",
    ("archived", "restart_as_new"): "archived",
}


def _body(template: Any) -> Any:
    if template == "FUTURE":
        return {"scheduledTime": future_ms(3600)}
    if template == "NAME":
        return {"name": f"restarted {uid()}"}
    return template


@pytest.mark.parametrize(
    ("state", "action"),
    [pytest.param(s, a, id=f"{s}-{a}") for s in STATES for a in ACTIONS],
)
def test_every_move_from_every_state(console: Console, state: str, action: str) -> None:
    exp = in_state(console, state)
    method, template = ACTIONS[action]
    resp = console.call(method, f"{EXPERIMENTS}/{exp['id']}/{action}", json=_body(template))
    after = console.experiment(exp["id"])
    if (state, action) not in LEGAL:
        body = assert_error(resp, 400, "status")
        assert repr(state) in body["message"], body  # the error names the current state
        assert action in body["message"], body
        assert after == exp, "an illegal move changed the experiment"
        return
    expected_status = 201 if action == "restart_as_new" else 200
    assert resp.status_code == expected_status, resp.text
    assert after["status"] == LEGAL[(state, action)]
    assert after["version"] == exp["version"] + (0 if action == "restart_as_new" else 1)
    if action != "restart_as_new":
        assert resp.json()["data"] == after


def test_make_decision_sets_the_launched_group_and_times(console: Console) -> None:
    exp = in_state(console, "active")
    decided = console.act(exp["id"], "make_decision", {"id": "b", "decisionReason": "B is best"})
    assert decided["status"] == "decision_made"
    assert decided["launchedGroupID"] == "b"
    assert decided["decisionReason"] == "B is best"
    assert decided["decisionTime"] == decided["endTime"] >= exp["startTime"]
    assert decided["startTime"] == exp["startTime"]


@pytest.mark.parametrize("state", ["setup", "decision_made", "abandoned"])
def test_unarchive_returns_to_the_state_it_was_archived_from(console: Console, state: str) -> None:
    exp = in_state(console, state)
    archived = console.act(exp["id"], "archive", {"archiveReason": "cleanup"})
    assert archived["status"] == "archived"
    assert archived["isStale"] is False
    restored = console.act(exp["id"], "unarchive")
    assert restored["status"] == state
    assert restored["launchedGroupID"] == exp["launchedGroupID"]
    assert restored["version"] == exp["version"] + 2


# --- schedule_start -------------------------------------------------------------------------------


def test_schedule_start_stores_the_time_and_starts_when_it_passes(console: Console) -> None:
    exp = console.create()
    when = future_ms(1.5)
    scheduled = console.act(exp["id"], "schedule_start", {"scheduledTime": when}, method="POST")
    assert scheduled["status"] == "setup"
    assert scheduled["scheduledStartTime"] == when
    assert scheduled["startTime"] is None
    time.sleep(max(0.0, (when - time.time() * 1000) / 1000) + 0.5)
    started = console.experiment(exp["id"])
    assert started["status"] == "active"
    assert started["startTime"] == when
    assert "scheduledStartTime" not in started
    # The next write stores the start; active experiments lock their groups.
    assert_error(console.patch(f"{EXPERIMENTS}/{exp['id']}", json={"allocation": 10}), 400, "allocation")
    decided = console.act(
        exp["id"], "make_decision", {"id": exp["groups"][1]["id"], "decisionReason": "done"}
    )
    assert decided["status"] == "decision_made" and decided["startTime"] == when


def test_start_now_replaces_a_schedule_and_reset_cancels_it(console: Console) -> None:
    exp = console.create()
    console.act(exp["id"], "schedule_start", {"scheduledTime": future_ms(3600)}, method="POST")
    started = console.act(exp["id"], "start")
    assert "scheduledStartTime" not in started and started["startTime"] < future_ms(60)
    reset = console.act(exp["id"], "reset")
    assert "scheduledStartTime" not in reset


# --- disable_groups / enable_groups ---------------------------------------------------------------


def test_disable_and_enable_groups_mark_them(console: Console) -> None:
    exp = in_state(console, "active")
    path = f"{EXPERIMENTS}/{exp['id']}"
    resp = console.post(
        f"{path}/disable_groups", json={"group_names": ["b"]}
    )  # names match case-insensitively
    assert resp.status_code == 200, resp.text
    disabled = resp.json()["data"]
    assert [(g["name"], g["disabled"]) for g in disabled["groups"]] == [
        ("Control", False),
        ("A", False),
        ("B", True),
    ]
    assert disabled["version"] == exp["version"] + 1
    enabled = console.act(exp["id"], "enable_groups", {"group_names": ["B"]}, method="POST")
    assert all(g["disabled"] is False for g in enabled["groups"])


# --- restart_as_new -------------------------------------------------------------------------------


def test_restart_as_new_copies_the_design_into_a_new_experiment(console: Console) -> None:
    exp = in_state(
        console,
        "active",
        hypothesis="Three steps beat four",
        primaryMetrics=[metric()],
        tags=["copied"],
        controlGroupID="control",
        manualQualityScores=[
            {"criteriaName": "X", "status": "PASSED", "criteriaDescription": "x", "score": 100, "weight": 5}
        ],
    )
    console.act(exp["id"], "disable_groups", {"group_names": ["B"]}, method="POST")
    suffix = uid()
    resp = console.post(
        f"{EXPERIMENTS}/{exp['id']}/restart_as_new", json={"name": f"Checkout Again {suffix}"}
    )
    assert resp.status_code == 201, resp.text
    new = resp.json()["data"]
    assert new["id"] == f"checkout_again_{suffix}"
    assert new["name"] == f"Checkout Again {suffix}"
    assert new["status"] == "setup" and new["version"] == 1
    for field in ("startTime", "endTime", "decisionTime", "launchedGroupID", "decisionReason"):
        assert new[field] is None, field
    for field in (
        "hypothesis",
        "primaryMetrics",
        "tags",
        "controlGroupID",
        "manualQualityScores",
        "allocation",
    ):
        assert new[field] == exp[field], field
    assert [(g["id"], g["name"], g["size"], g["disabled"]) for g in new["groups"]] == [
        (g["id"], g["name"], g["size"], False) for g in exp["groups"]
    ]
    assert new["createdTime"] > exp["createdTime"]
    assert console.experiment(new["id"]) == new
    original = console.experiment(exp["id"])
    assert original["status"] == "active" and original["groups"][2]["disabled"] is True


@pytest.mark.parametrize("state", ["active", "decision_made", "abandoned"])
@pytest.mark.parametrize(("fields", "field"), LOCKED)
def test_design_is_locked_once_started(
    console: Console, state: str, fields: dict[str, Any], field: str
) -> None:
    exp = in_state(console, state)
    if field == "launchedGroupID" and state == "decision_made":
        fields = {"launchedGroupID": "b"}  # may change after a decision: see below
        resp = console.patch(f"{EXPERIMENTS}/{exp['id']}", json=fields)
        assert resp.status_code == 200 and resp.json()["data"]["launchedGroupID"] == "b", resp.text
        return
    if field == "status":
        fields = {"status": "setup" if state != "setup" else "active"}
    body = assert_error(console.patch(f"{EXPERIMENTS}/{exp['id']}", json=fields), 400, field)
    assert repr(state) in body["message"], body
    assert console.experiment(exp["id"]) == exp
