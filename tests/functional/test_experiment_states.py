"""The service moves experiments as the state machine's table says (`ALLOWED_FROM`, `LEADS_TO`),
the table the docs' diagram is drawn from (tests/unit/test_state_diagram.py): every action from
every state an experiment can be in ends where the table says, or is a 400 naming `status` when the
table does not allow it. The expected outcome comes from the table, the actual one from the API.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from expconsole.services.experiments import (
    ALLOWED_FROM,
    ARCHIVED_FROM,
    DELETED,
    LEADS_TO,
    NEW_EXPERIMENT,
    UNCHANGED,
)
from expconsole_tools.state_diagram import entered_states
from tests.functional.test_experiments_api import EXPERIMENTS, Console, assert_error, console, uid

__all__ = ["console"]  # the fixture, re-exported so that pytest finds it in this module

GROUPS = [
    {"name": "Control", "id": "control", "size": 34},
    {"name": "A", "id": "a", "size": 33},
    {"name": "B", "id": "b", "size": 33},
]
STATES = entered_states()
ARCHIVABLE = [s for s in STATES if s in ALLOWED_FROM["archive"]]


def _request(action: str) -> tuple[str, str, Any]:
    """(method, path suffix, body) of an action's route."""
    if action == "delete":
        return "DELETE", "", None
    bodies: dict[str, Any] = {
        "make_decision": {"id": "a", "decisionReason": "A wins"},
        "abandon": {"decisionReason": "broken"},
        "restart_as_new": {"name": f"restarted {uid()}"},
        "schedule_start": {"scheduledTime": int((time.time() + 3600) * 1000)},
        "disable_groups": {"group_names": ["B"]},
        "enable_groups": {"group_names": ["B"]},
    }
    method = (
        "POST" if action in ("restart_as_new", "schedule_start", "disable_groups", "enable_groups") else "PUT"
    )
    return method, f"/{action}", bodies.get(action)


def _act(console: Console, exp_id: str, action: str) -> Any:
    method, suffix, body = _request(action)
    return console.call(method, f"{EXPERIMENTS}/{exp_id}{suffix}", json=body)


def _in_state(console: Console, state: str, archived_from: str = "setup") -> dict[str, Any]:
    """A new experiment brought to `state` through the API (archived from `archived_from`)."""
    exp = console.create(groups=GROUPS)
    path = {
        "setup": [],
        "active": ["start"],
        "decision_made": ["start", "make_decision"],
        "abandoned": ["start", "abandon"],
    }
    for action in path[archived_from if state == "archived" else state]:
        assert _act(console, exp["id"], action).status_code == 200
    if state == "archived":
        assert _act(console, exp["id"], "archive").status_code == 200
    exp = console.experiment(exp["id"])
    assert exp["status"] == state
    return exp


ALLOWED = [
    pytest.param(action, state, back, id=f"{action}-from-{state}" + (f"-was-{back}" if back else ""))
    for action in LEADS_TO
    for state in STATES
    if state in ALLOWED_FROM[action]
    for back in (ARCHIVABLE if state == "archived" else [None])
]
REFUSED = [
    pytest.param(action, state, id=f"{action}-from-{state}")
    for action in LEADS_TO
    for state in STATES
    if state not in ALLOWED_FROM[action]
]


@pytest.mark.parametrize(("action", "state", "archived_from"), ALLOWED)
def test_an_allowed_move_ends_where_the_table_says(
    console: Console, action: str, state: str, archived_from: str | None
) -> None:
    exp = _in_state(console, state, archived_from or "setup")
    resp = _act(console, exp["id"], action)
    assert resp.status_code in (200, 201), resp.text
    to = LEADS_TO[action]
    if to == DELETED:
        assert_error(console.get(f"{EXPERIMENTS}/{exp['id']}"), 404)
        return
    if to == NEW_EXPERIMENT:
        assert resp.json()["data"]["status"] == "setup" and resp.json()["data"]["id"] != exp["id"]
        assert console.experiment(exp["id"])["status"] == state  # the original unchanged
        return
    expected = {ARCHIVED_FROM: archived_from, UNCHANGED: state}.get(to, to)
    assert console.experiment(exp["id"])["status"] == expected


@pytest.mark.parametrize(("action", "state"), REFUSED)
def test_a_move_the_table_does_not_allow_is_400_naming_the_status(
    console: Console, action: str, state: str
) -> None:
    exp = _in_state(console, state)
    body = assert_error(_act(console, exp["id"], action), 400, "status")
    assert repr(state) in body["message"] and action in body["message"]
    assert console.experiment(exp["id"])["status"] == state
