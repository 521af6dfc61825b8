"""End-to-end tests of a gate's lifecycle actions (enable, disable, launch, archive, unarchive),
its version history and the reference lists.

Helpers and the `console` fixture come from `test_gates.py` beside this file.

Only what needs the server stays here (a happy path, an error, keys, concurrency, the workflows);
the validation, edge and list cases run in process in
`tests/functional/test_gates_lifecycle_api.py`.
"""

from __future__ import annotations

import pytest
from test_gates import GATES, Console, assert_error, console, country, rule, uid

from tests.functional.test_gates_lifecycle_api import act

__all__ = ["console"]  # the fixture, re-exported so that pytest finds it in this module

# --- enable, disable, launch ---------------------------------------------------------------------------


def test_disable_then_enable(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country())])
    disabled = act(console, gate["id"], "disable")
    assert disabled["isEnabled"] is False
    assert disabled["status"] == "Disabled"
    assert disabled["version"] == gate["version"] + 1
    assert disabled["lastModifiedTime"] >= gate["lastModifiedTime"]
    assert disabled["rules"] == gate["rules"]
    assert console.gate(gate["id"]) == disabled
    enabled = act(console, gate["id"], "enable")
    assert enabled["isEnabled"] is True
    assert enabled["status"] == "In Progress"
    assert enabled["version"] == gate["version"] + 2
    assert (enabled["type"], enabled["typeReason"]) == ("TEMPORARY", "NONE")
    assert console.gate(gate["id"]) == enabled


@pytest.mark.parametrize("action", ["enable", "disable", "launch", "archive", "unarchive"])
def test_action_on_an_unknown_gate_is_404(console: Console, action: str) -> None:
    gate_id = f"missing_{uid()}"
    assert_error(console.put(f"{GATES}/{gate_id}/{action}"), 404)
    assert_error(console.get(f"{GATES}/{gate_id}"), 404)
