"""How the local server's sandbox pools start sandboxes: ahead of the first request when warmed,
and, for a burst of short requests, not one per request (a cold start costs the cores the others
need). The sandboxes here are stand-ins that block until told, so each case has one outcome
whatever the machine's speed; tests/functional/test_local_server.py runs real ones."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from expconsole_tools.local import gateway
from expconsole_tools.local.gateway import Functions, Gateway, _Pool
from expconsole_tools.local.server import FIRST_PAGE, SIGNED_IN
from expconsole_tools.local.template import Function, find_template, load_api

FUNCTION = Function("WorkFunction", Path("work/app.py"), "lambda_handler")
WAIT_S = 30  # bounds every wait on a thread here: reached only if the pool deadlocks


class _Process:
    def poll(self) -> int | None:
        return None


class FakeSandbox:
    """A sandbox whose init and invocations wait for the test to let them go."""

    created: list[FakeSandbox] = []
    init_gate = threading.Event()
    invoke_gate = threading.Event()

    def __init__(self, function: Function, artifact: Any = None) -> None:
        self.function = function
        self.process = _Process()
        self.idle_since = 0.0
        self.cold_start_s = 60.0  # a slow cold start: waiting for a busy sandbox is worth it
        self.invocations: list[Any] = []
        FakeSandbox.created.append(self)

    def init(self) -> None:
        assert FakeSandbox.init_gate.wait(WAIT_S)

    def invoke(self, event: Any, redact: list[str]) -> Any:
        self.invocations.append(event)
        if event == "blocked":
            assert FakeSandbox.invoke_gate.wait(WAIT_S)
        return {"sandbox": FakeSandbox.created.index(self)}

    def close(self) -> None:
        pass

    def stop(self, grace: float = 0) -> None:
        pass


@pytest.fixture(autouse=True)
def fake_sandboxes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(gateway, "_Sandbox", FakeSandbox)
    FakeSandbox.created = []
    FakeSandbox.init_gate = threading.Event()
    FakeSandbox.invoke_gate = threading.Event()
    yield
    FakeSandbox.init_gate.set()
    FakeSandbox.invoke_gate.set()


def _in_thread(target: Any, *args: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(target(*args)), daemon=True)
    thread.start()
    return thread, out


def test_a_warmed_sandbox_serves_the_first_request_and_one_that_comes_while_it_starts_waits_for_it() -> None:
    pool = _Pool(FUNCTION, limit=10)
    warming, _ = _in_thread(pool.warm)
    request, answer = _in_thread(pool.invoke, "first", [])
    FakeSandbox.init_gate.set()  # the warm sandbox's import ends
    warming.join(WAIT_S)
    request.join(WAIT_S)
    assert answer == [{"sandbox": 0}]
    assert len(FakeSandbox.created) == 1, "the request started a sandbox of its own"
    pool.warm()  # a function with a sandbox is not warmed twice
    assert len(FakeSandbox.created) == 1


def test_a_request_that_finds_the_sandbox_busy_waits_for_it_rather_than_start_a_slower_one() -> None:
    """For the web console's files (queue_bursts): a burst waits for the warm sandbox."""
    FakeSandbox.init_gate.set()
    pool = _Pool(FUNCTION, limit=10, queue_bursts=True)
    pool.invoke("warm-up", [])  # one sandbox, its cold start measured (60 s)
    busy, _ = _in_thread(pool.invoke, "blocked", [])
    second, answer = _in_thread(pool.invoke, "second", [])
    FakeSandbox.invoke_gate.set()  # the busy one finishes: the second request gets it
    busy.join(WAIT_S)
    second.join(WAIT_S)
    assert answer == [{"sandbox": 0}] and len(FakeSandbox.created) == 1


def test_a_request_that_finds_every_sandbox_busy_starts_another_at_once_as_lambda_does() -> None:
    """Any other function: concurrent requests run concurrently, however slow a cold start is."""
    FakeSandbox.init_gate.set()
    pool = _Pool(FUNCTION, limit=10)
    pool.invoke("warm-up", [])  # one sandbox, its cold start measured (60 s)
    busy, _ = _in_thread(pool.invoke, "blocked", [])
    second, answer = _in_thread(pool.invoke, "second", [])
    second.join(WAIT_S)
    FakeSandbox.invoke_gate.set()
    busy.join(WAIT_S)
    assert answer == [{"sandbox": 1}] and len(FakeSandbox.created) == 2


def test_the_first_requests_of_a_function_get_sandboxes_at_once() -> None:
    """As on Lambda: before any cold start has been measured, a request that finds the only
    sandbox still starting starts its own (it would otherwise wait in line behind the first)."""
    pool = _Pool(FUNCTION, limit=10)
    first, _ = _in_thread(pool.invoke, "first", [])
    second, _ = _in_thread(pool.invoke, "second", [])
    for _ in range(WAIT_S * 1000):
        if len(FakeSandbox.created) == 2:
            break
        threading.Event().wait(0.001)
    FakeSandbox.init_gate.set()
    first.join(WAIT_S)
    second.join(WAIT_S)
    assert len(FakeSandbox.created) == 2, "the second request waited for the first one's sandbox"


def test_warming_starts_the_first_pages_functions_in_order_and_no_other() -> None:
    """What the web console loads first, as template.yaml routes it: the page (web function), then
    the experiments list (experiments, layers; each checks the key itself)."""
    FakeSandbox.init_gate.set()
    api = load_api(find_template(None))
    server_gateway = Gateway(api, Functions())
    server_gateway.warm(FIRST_PAGE + SIGNED_IN)
    started = [sandbox.function.logical_id for sandbox in FakeSandbox.created]
    assert started == ["WebFunction", "ExperimentsFunction", "LayersFunction"]
    server_gateway.functions.close()
