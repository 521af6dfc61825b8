"""One pulse scenario for the end-to-end pulse runs (`expconsole pulse` locally and with `--aws`).

A started two-group experiment (`c`, `t`) whose primary metric counts the users who bought;
exposures and purchases generated with a seed; the expected Δ and p-value computed here with
numpy and scipy (docs/statistics.md, 'Fixed-horizon test': Welch's t below 100 df, else the
normal), independently of the code.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from scipy import stats

from tests.e2e.client import ApiClient, uid

INGEST = "/v1/webhooks/event_webhook"


def send(sender: ApiClient, events: list[dict[str, Any]]) -> None:
    for start in range(0, len(events), 1000):
        resp = sender.post(INGEST, json=events[start : start + 1000])
        assert resp.status_code == 202, resp.text


def make_buyers_metric(console: ApiClient) -> str:
    name = f"buyers_{uid()}"
    body = {"name": name, "type": "event_user", "metricEvents": [{"name": f"{name}_purchase"}]}
    assert console.post("/console/v1/metrics", json=body).status_code == 201
    return name


def start_buyers_experiment(console: ApiClient, prefix: str) -> tuple[str, str, int]:
    """A started experiment on a new buyers metric: (experiment id, metric name, start time in ms)."""
    metric = make_buyers_metric(console)
    resp = console.post(
        "/console/v1/experiments",
        json={
            "name": f"{prefix}_{uid()}",
            "groups": [{"name": "Control", "id": "c", "size": 50}, {"name": "Test", "id": "t", "size": 50}],
            "controlGroupID": "c",
            "primaryMetrics": [{"name": metric, "type": "event_user"}],
        },
    )
    assert resp.status_code == 201, resp.text
    exp_id = resp.json()["data"]["id"]
    started = console.put(f"/console/v1/experiments/{exp_id}/start", json={})
    assert started.status_code == 200, started.text
    return exp_id, metric, started.json()["data"]["startTime"]


def send_buyers(
    sender: ApiClient, exp_id: str, metric: str, start: int, seed: int, users: int = 200
) -> tuple[np.ndarray, np.ndarray]:
    """Exposures and purchases (30% in c, 50% in t) just after the start, sent and in the past
    when this returns: (group of each user, whether each bought)."""
    rng = np.random.default_rng(seed)
    group = np.where(rng.random(users) < 0.5, "c", "t")
    bought = rng.random(users) < np.where(group == "t", 0.5, 0.3)
    events = []
    for u in range(users):
        user = {"userID": f"u{seed}-{u}-{exp_id}"}
        meta = {"experiment": exp_id, "group": str(group[u])}
        events.append(
            {"event": "console::experiment_exposure", "user": user, "timestamp": start + 10, "metadata": meta}
        )
        if bought[u]:
            events.append({"event": f"{metric}_purchase", "user": user, "timestamp": start + 20})
    send(sender, events)
    while time.time() * 1000 <= start + 100:
        time.sleep(0.05)
    return group, bought


def expected_welch(test: np.ndarray, control: np.ndarray) -> tuple[float, float]:
    """Δ of means and its two-sided p-value: Student's t below 100 Welch df, else normal.

    (docs/statistics.md, 'Fixed-horizon test'.)
    """
    vt, vc = test.var(ddof=1) / test.size, control.var(ddof=1) / control.size
    delta = test.mean() - control.mean()
    df = (vt + vc) ** 2 / (vt**2 / (test.size - 1) + vc**2 / (control.size - 1))
    z = delta / math.sqrt(vt + vc)
    p = 2 * stats.t.sf(abs(z), df) if df < 100 else 2 * stats.norm.sf(abs(z))
    return delta, p
