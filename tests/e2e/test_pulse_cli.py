"""End-to-end: `expconsole pulse` against a running local server, for a holdout and an experiment.

The server runs on a data dir of its own, so the command (a separate process, as a user would
run it) finds the server's backend through it. Expected figures are computed here from the
events the test generated, with numpy and scipy.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.e2e.buyers import expected_welch, make_buyers_metric, send, send_buyers, start_buyers_experiment
from tests.e2e.client import ApiClient, uid
from tests.e2e.conftest import REPO


def pulse_cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "expconsole_tools.cli",
            "pulse",
            "--data-dir",
            str(data_dir),
            "--no-progress",
            *args,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_pulse_command_loads_a_holdout_whose_figures_match_the_raw_events(
    console: ApiClient, sender: ApiClient, data_dir: Path
) -> None:
    metric = make_buyers_metric(console)
    resp = console.post(
        "/console/v1/holdouts",
        json={
            "name": f"holdout_{uid()}",
            "passPercentage": 20,
            "monitoringMetrics": [{"name": metric, "type": "event_user"}],
        },
    )
    assert resp.status_code == 201, resp.text
    holdout = resp.json()["data"]
    created = holdout["createdTime"]
    rng = np.random.default_rng(7)
    held = rng.random(300) < 0.2
    bought = rng.random(300) < np.where(held, 0.2, 0.35)
    events = []
    for u in range(300):
        user = {"userID": f"h{u}-{holdout['id']}"}
        ts = created + 5 + u
        events.append(
            {
                "event": "console::holdout_exposure",
                "user": user,
                "timestamp": ts,
                "metadata": {"holdout": holdout["id"], "heldOut": bool(held[u])},
            }
        )
        if bought[u]:
            events.append({"event": f"{metric}_purchase", "user": user, "timestamp": ts + 1000})
    send(sender, events)
    while time.time() * 1000 <= created + 1400:
        time.sleep(0.1)

    run = pulse_cli(data_dir, "--holdout", holdout["id"])
    assert run.returncode == 0, run.stderr
    assert f"Holdout {holdout['id']}: success" in run.stdout

    resp = console.get(f"/console/v1/holdouts/{holdout['id']}/pulse_results", params={"cuped": "false"})
    assert resp.status_code == 200, resp.text
    (entry,) = resp.json()["data"]["monitoringMetrics"]
    delta, p = expected_welch(bought[~held].astype(float), bought[held].astype(float))
    assert entry["metricID"] == f"{metric}::event_user"
    assert entry["absoluteChange"] == pytest.approx(delta, rel=1e-9)
    assert entry["pValue"] == pytest.approx(p, rel=1e-9)


def test_pulse_command_loads_an_experiment_and_records_the_load(
    console: ApiClient, sender: ApiClient, data_dir: Path
) -> None:
    exp_id, metric, start = start_buyers_experiment(console, "cli")

    # A date before the start has nothing to analyse: success, and no results yet.
    day_before = time.strftime("%Y-%m-%d", time.gmtime(start / 1000 - 86_400))
    early = pulse_cli(data_dir, "--experiment", exp_id, "--date", day_before)
    assert early.returncode == 0, early.stderr
    assert (
        console.get(f"/console/v1/experiments/{exp_id}/pulse_results?control=c&test=t").json()["data"][
            "primaryMetrics"
        ]
        == []
    )

    group, bought = send_buyers(sender, exp_id, metric, start, seed=11)

    run = pulse_cli(data_dir, "--experiment", exp_id)
    assert run.returncode == 0, run.stderr
    resp = console.get(f"/console/v1/experiments/{exp_id}/pulse_results?control=c&test=t&cuped=false")
    (entry,) = resp.json()["data"]["primaryMetrics"]
    delta, p = expected_welch(bought[group == "t"].astype(float), bought[group == "c"].astype(float))
    assert entry["value"] == pytest.approx(delta, rel=1e-9)
    assert entry["p_value"] == pytest.approx(p, rel=1e-9)
    assert (entry["test_units"], entry["control_units"]) == (
        int((group == "t").sum()),
        int((group == "c").sum()),
    )

    history = console.get(f"/console/v1/experiments/{exp_id}/pulse_load_history").json()["data"]
    assert [h["creatorName"] for h in history] == ["expconsole pulse", "expconsole pulse"]
    assert all(h["finishedState"] == "success" for h in history)

    missing = pulse_cli(data_dir, "--experiment", "no_such_experiment")
    assert missing.returncode == 1
    assert "404" in missing.stderr
