"""bench/load.py: a short run against its own server stores every acknowledged write exactly once;
and its checks do catch lost, duplicated and invented writes (fed by hand, no server).

Behaviour only: the figures (requests/s, latency) depend on the machine and are not asserted.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench" / "load.py"


@pytest.fixture(scope="module")
def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_load", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_short_run_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    report = tmp_path / "load.json"
    command = [sys.executable, str(BENCH), "--clients", "3", "--seconds", "3", "--json", str(report)]
    command += ["--idle-seconds", "6"]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "verdict: PASS" in result.stdout, output
    # idle workers are reaped, as Lambda reclaims idle environments: none is left after the idle time
    burst = re.search(r"workers after the burst: (\d+)", result.stdout)
    idle = re.search(r"workers after \d+ s idle: (\d+)", result.stdout)
    assert burst and idle, output
    assert int(burst.group(1)) > 0 and int(idle.group(1)) == 0, output
    figures = json.loads(report.read_text())
    assert figures["verdict"] == "PASS" and figures["errors"] == 0, output
    # the run did something worth checking, and the checks looked at all of it
    done = figures["acknowledged"]
    assert done["creates"] > 0 and done["events"] > 0, output
    checks = {check["name"]: check for check in figures["checks"]}
    assert all(not check["failures"] for check in checks.values()), output
    assert (
        checks["entities: acknowledged writes stored once, last version wins"]["checked"] >= done["creates"]
    )
    assert checks["events: each acknowledged event listed exactly once"]["checked"] >= done["events"]
    listed = sum(checks[f"{kind}: listed exactly once"]["checked"] for kind in ("gates", "experiments"))
    listed += checks["dynamic_configs: listed exactly once"]["checked"]
    assert listed == done["creates"]
    ops = figures["operations"]
    assert ops["create"]["requests"] + ops["update"]["requests"] > 0
    assert ops["ingest"]["ok"] > 0 and ops["get"]["ok"] + ops["list"]["ok"] > 0


def _snapshot(version: int, description: str) -> dict[str, Any]:
    return {"version": version, "description": description}


def test_entity_check_passes_a_consistent_history(load: ModuleType) -> None:
    entity = load.Entity("gates", "g1", "first", created="acked", acked=[(2, "a"), (3, "b")])
    history = [_snapshot(3, "b"), _snapshot(2, "a"), _snapshot(1, "first")]
    assert load.check_entity(entity, _snapshot(3, "b"), history) == []


def test_entity_check_catches_lost_invented_and_stale_writes(load: ModuleType) -> None:
    history = [_snapshot(2, "b"), _snapshot(1, "first")]
    # two updates acknowledged with the same version: one of them is lost
    lost = load.Entity("gates", "g1", "first", created="acked", acked=[(2, "a"), (2, "b")])
    problems = load.check_entity(lost, _snapshot(2, "b"), history)
    assert any("same version" in p for p in problems), problems
    assert any("'a'" in p for p in problems), problems
    # a version nobody was told about (an update applied twice, or invented)
    extra = load.Entity("gates", "g2", "first", created="acked", acked=[(2, "b")])
    problems = load.check_entity(extra, _snapshot(3, "b"), [_snapshot(3, "b"), *history])
    assert any("expected 2" in p for p in problems), problems
    # the current document is not the last version
    problems = load.check_entity(extra, _snapshot(2, "a"), history)
    assert any("not what is stored" in p or "differs" in p for p in problems), problems
    # a gap in the history, and an acknowledged create that is gone
    problems = load.check_entity(extra, _snapshot(2, "b"), [_snapshot(2, "b")])
    assert any("missing [1]" in p for p in problems), problems
    assert load.check_entity(extra, None, []) != []


def test_an_unanswered_update_may_or_may_not_have_landed(load: ModuleType) -> None:
    entity = load.Entity("gates", "g1", "first", created="acked", acked=[(2, "a")], unknown=["x"])
    history = [_snapshot(2, "a"), _snapshot(1, "first")]
    assert load.check_entity(entity, _snapshot(2, "a"), history) == []
    assert load.check_entity(entity, _snapshot(3, "x"), [_snapshot(3, "x"), *history]) == []
    four = [_snapshot(4, "y"), _snapshot(3, "x"), *history]
    assert load.check_entity(entity, _snapshot(4, "y"), four) != []


def test_listing_check_catches_missing_repeated_and_foreign_ids(load: ModuleType) -> None:
    entities = [
        load.Entity("gates", "a", "", created="acked"),
        load.Entity("gates", "b", "", created="acked"),
        load.Entity("gates", "c", "", created="unknown"),
    ]
    assert load.check_listing("gates", entities, Counter({"a": 1, "b": 1})).passed
    assert load.check_listing("gates", entities, Counter({"a": 1, "b": 1, "c": 1})).passed
    check = load.check_listing("gates", entities, Counter({"a": 2, "c": 2, "z": 1}))
    text = "\n".join(check.failures)
    assert "a: acknowledged (201), listed 2 times" in text
    assert "b: acknowledged (201), listed 0 times" in text
    assert "c: create unknown, listed 2 times" in text
    assert "z: listed 1 times, never created" in text


def test_events_check_catches_lost_and_duplicated_events(load: ModuleType) -> None:
    acked = load.Batch(b"[]", {"m1": "e", "m2": "e"}, acked=True, sends=2)
    unanswered = load.Batch(b"[]", {"m3": "e"}, acked=False, sends=1)
    good, other = load.check_events([acked, unanswered], Counter({"m1": 1, "m2": 1}))
    assert good.passed and other.passed and good.checked == 2 and other.checked == 1
    good, other = load.check_events([acked, unanswered], Counter({"m1": 2, "m3": 2, "m9": 1}))
    text = "\n".join(good.failures + other.failures)
    assert "m1 (acknowledged, sent 2x): listed 2 times" in text
    assert "m2 (acknowledged, sent 2x): listed 0 times" in text
    assert "m3 (not acknowledged, sent 1x): listed 2 times" in text
    assert "m9: listed 1 times, never sent" in text
