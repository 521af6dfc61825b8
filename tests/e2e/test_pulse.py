"""End-to-end: a seeded synthetic experiment through ingestion, `load_pulse` and `pulse_results`.

Three groups (control and two tests, each with a known effect), four metrics (revenue `sum`,
buyers `event_user`, revenue per view `ratio`, a three-step `funnel`), pre-period events on the 7
days before today for CUPED, and a few exposures that must not be analysed (unknown group,
before the start). Everything goes through the HTTP API of the local server; every figure of
`pulse_results` (with and without CUPED) is recomputed from the generated raw events by
tests/pulse_reference.py (numpy, scipy, statsmodels; no pipeline or stats-engine code).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tests.e2e.client import ApiClient, uid
from tests.pulse_reference import (
    DAY_MS,
    EXPOSURE,
    Registry,
    analyse_day,
    close,
    day_of,
    entry_figures,
    exposures,
    srm_p_value,
)

WEBHOOK = "/v1/webhooks/event_webhook"
EXPERIMENTS = "/console/v1/experiments"
GROUPS = [
    {"name": "Control", "id": "ctl", "size": 34},
    {"name": "Test one", "id": "t1", "size": 33},
    {"name": "Test two", "id": "t2", "size": 33},
]
# known effects per group: view rate, purchase probability boost, revenue multiplier
VIEW_RATE = {"ctl": 1.0, "t1": 1.3, "t2": 1.0}
BUY_BOOST = {"ctl": 0.0, "t1": 0.05, "t2": 0.2}
REVENUE = {"ctl": 1.0, "t1": 1.0, "t2": 1.5}
FIGURES = (
    "value",
    "confidence_interval_delta",
    "percent_change",
    "percent_confidence_interval_delta",
    "test_mean",
    "control_mean",
    "test_std",
    "control_std",
    "p_value",
)


def iso(day: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(day * 86_400))


def ok(resp: Any, status: int = 200) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    return resp.json()


def make_metrics(api: ApiClient, s: str, ev: dict[str, str]) -> tuple[list[dict[str, Any]], list[str]]:
    revenue = {"name": f"revenue {s}", "type": "sum", "metricEvents": [{"name": ev["buy"]}]}
    bodies = [
        revenue,
        {"name": f"buyers {s}", "type": "event_user", "metricEvents": [{"name": ev["buy"]}]},
        {
            "name": f"revenue per view {s}",
            "type": "ratio",
            "metricComponentMetrics": [
                {"name": revenue["name"], "type": "sum"},
                {"name": ev["view"], "type": "event_count"},
            ],
        },
        {
            "name": f"checkout {s}",
            "type": "funnel",
            "funnelEventList": [{"name": ev[k], "type": "event_count"} for k in ("view", "cart", "buy")],
            "funnelCountDistinct": "users",
        },
    ]
    for body in bodies:
        ok(api.post("/console/v1/metrics", json=body), 201)
    return bodies, [f"{b['name']}::{b['type']}" for b in bodies]


def population(s: str, exp_id: str, start: int, ev: dict[str, str]) -> tuple[list[dict[str, Any]], int]:
    """The seeded raw events, and how many exposures went to an unknown group."""
    rng = np.random.default_rng(20260707)
    today = day_of(start) * DAY_MS
    out: list[dict[str, Any]] = []

    def add(user: str, name: str, ts: int, value: float | None = None, **metadata: Any) -> None:
        e: dict[str, Any] = {
            "event": name,
            "user": {"userID": user},
            "timestamp": int(ts),
            "metadata": metadata,
        }
        if value is not None:
            e["value"] = value
        out.append(e)

    def expose(user: str, group: str, ts: int) -> None:
        add(user, EXPOSURE, ts, experiment=exp_id, group=group)

    def price(scale: float = 1.0) -> float:
        return round(float(rng.lognormal(3.0, 0.6)) * scale, 2)

    ids = [g["id"] for g in GROUPS]
    n_units = 420
    assigned = rng.choice(ids, size=n_units, p=[g["size"] / 100 for g in GROUPS])
    propensity = rng.gamma(2.0, 1.0, size=n_units)
    for i in range(n_units):
        user, group, lam = f"{s}-u{i}", str(assigned[i]), float(propensity[i])
        for k in range(1, 8):  # pre-period: the 7 days before today
            day = today - k * DAY_MS
            for _ in range(rng.poisson(0.5 * lam)):
                add(user, ev["view"], day + int(rng.integers(0, DAY_MS)))
            if rng.random() < min(0.8, 0.05 * lam):
                add(user, ev["cart"], day + int(rng.integers(0, DAY_MS)))
            if rng.random() < min(0.8, 0.06 * lam):
                add(user, ev["buy"], day + int(rng.integers(0, DAY_MS)), price())
        t0 = start + 1 + int(rng.integers(0, 1500))
        if rng.random() < 0.2 and t0 - 1 >= start:  # after the start but before its exposure
            add(user, ev["view"], t0 - 1)
        expose(user, group, t0)
        if rng.random() < 0.05:  # a repeated exposure to the same group
            expose(user, group, t0 + int(rng.integers(1, 500)))
        for _ in range(rng.poisson(1.5 * lam * VIEW_RATE[group])):
            add(user, ev["view"], t0 + int(rng.integers(0, 2500)))
        if rng.random() < min(0.9, 0.15 * lam + BUY_BOOST[group]):
            add(user, ev["cart"], t0 + int(rng.integers(0, 2500)))
        if rng.random() < min(0.9, 0.1 * lam + BUY_BOOST[group]):
            add(user, ev["buy"], t0 + int(rng.integers(0, 2500)), price(REVENUE[group]))
    # an outlier the winsorization must cap (on a unit of the first test group)
    add(f"{s}-u{list(assigned).index('t1')}", ev["buy"], start + 2600, 800.0)
    # not analysed: exposures to an unknown group, and one before the start
    unknown = 3
    for j in range(unknown):
        expose(f"{s}-x{j}", "nope", start + 100 + j)
        add(f"{s}-x{j}", ev["buy"], start + 200 + j, 50.0)
    expose(f"{s}-early", "t1", start - 10_000)
    add(f"{s}-early", ev["buy"], start + 300, 70.0)
    # exposed before the start, then validly: analysed from the valid exposure
    expose(f"{s}-late", "t2", start - 5_000)
    expose(f"{s}-late", "ctl", start + 400)
    add(f"{s}-late", ev["view"], start + 450)
    # a crossover: first ctl, then t1 (analysed in ctl)
    expose(f"{s}-cross", "ctl", start + 500)
    expose(f"{s}-cross", "t1", start + 600)
    add(f"{s}-cross", ev["buy"], start + 700, 20.0)
    return out, unknown


def test_pulse_results_equal_an_independent_computation(api: ApiClient, server_api: ApiClient) -> None:
    s = uid()
    ev = {"view": f"view_{s}", "cart": f"cart_{s}", "buy": f"purchase_{s}"}
    bodies, metric_ids = make_metrics(api, s, ev)
    exp = ok(
        api.post(
            EXPERIMENTS,
            json={
                "name": f"pulse e2e {s}",
                "groups": GROUPS,
                "controlGroupID": "ctl",
                "primaryMetrics": [{"name": b["name"], "type": b["type"]} for b in bodies],
            },
        ),
        201,
    )["data"]
    exp_id = exp["id"]
    start = ok(api.put(f"{EXPERIMENTS}/{exp_id}/start"))["data"]["startTime"]

    events, unknown = population(s, exp_id, start, ev)
    last = max(e["timestamp"] for e in events)
    while time.time() * 1000 <= last + 5:  # every event is in the past when it is sent
        time.sleep(0.05)
    for i in range(0, len(events), 2000):
        ok(server_api.post(WEBHOOK, json=events[i : i + 2000], timeout=60), 202)

    before = int(time.time() * 1000)
    load = ok(api.post(f"{EXPERIMENTS}/{exp_id}/load_pulse", params={"wait": "true"}, json={}, timeout=120))
    after = int(time.time() * 1000)
    assert load["message"] == "Pulse loaded."
    record = load["data"]
    assert record["finishedState"] == "success" and record["reloadType"] == "full"
    assert record["turboMode"] is False and before <= record["createdTime"] <= record["finishedTime"] <= after
    assert record["startDs"] == iso(day_of(start)) and record["endDs"] == iso(day_of(record["createdTime"]))
    history = ok(api.get(f"{EXPERIMENTS}/{exp_id}/pulse_load_history"))
    assert history["data"] == [record] and history["pagination"]["totalItems"] == 1

    # the reference: what the load saw (everything before it started)
    load_time = record["createdTime"]
    exp_ref = exposures(events, exp_id, start=start, cutoff=load_time, groups={g["id"]: True for g in GROUPS})
    assert f"{s}-early" not in exp_ref.first and not any(u.startswith(f"{s}-x") for u in exp_ref.first)
    assert exp_ref.first[f"{s}-late"][1] == "ctl" and exp_ref.first[f"{s}-cross"][1] == "ctl"
    assert exp_ref.counts["unknownGroup"] == unknown
    values, units = analyse_day(
        Registry(bodies), metric_ids, events, exp_ref, result_day=day_of(load_time), cutoff=load_time
    )
    assert sum(units.values()) == 420 + 2

    cuped_used = []
    for test in ("t1", "t2"):
        for cuped in (False, True):
            query = {"control": "ctl", "test": test, "cuped": str(cuped).lower()}
            data = ok(api.get(f"{EXPERIMENTS}/{exp_id}/pulse_results", params=query))["data"]
            assert data["ds"] == record["endDs"]
            assert data["secondaryMetrics"] == [] and data["otherMetrics"] == []
            assert [e["metricID"] for e in data["primaryMetrics"]] == metric_ids
            for entry in data["primaryMetrics"]:
                mid = entry["metricID"]
                want = entry_figures(values[mid][test], values[mid]["ctl"], 0.05, cuped)
                cuped_used.append(want["cuped_applied"])
                for key in FIGURES:
                    assert close(entry[key], want[key]), (mid, test, cuped, key, entry[key], want[key])
                for key in ("confidence_interval", "percent_confidence_interval"):
                    for end in ("lower", "upper"):
                        assert close(entry[key][end], want[key][end]), (mid, test, cuped, key, end)
                assert entry["test_units"] == units[test] and entry["control_units"] == units["ctl"]
                assert close(entry["adjustedAlpha"], 0.05)
                # sequential testing is off: its figures are the fixed-horizon ones
                assert entry["sequentialTestingPValue"] == entry["p_value"]
                assert entry["sequential_testing_confidence_interval"] == entry["confidence_interval"]
    assert any(cuped_used), "the data should make CUPED apply somewhere"

    # health: SRM against the configured sizes, units per group, the exposures not analysed
    exp_doc = ok(api.get(f"{EXPERIMENTS}/{exp_id}"))["data"]
    checks = {c["type"]: c for c in exp_doc["healthChecks"]}
    srm = checks["srm"]
    observed = [units[g["id"]] for g in GROUPS]
    p_srm = srm_p_value(observed, [g["size"] for g in GROUPS])
    assert close(srm["metadata"]["p_value"], p_srm)
    assert srm["status"] == ("FAILED" if p_srm < 0.001 else "WARNING" if p_srm < 0.01 else "PASSED")
    assert [(g["groupID"], g["units"]) for g in srm["metadata"]["groups"]] == [
        (g["id"], units[g["id"]]) for g in GROUPS
    ]
    balance = checks["exposure_balance"]["metadata"]
    assert balance["unknownGroupExposures"] == unknown
    assert balance["disabledGroupExposures"] == 0 and balance["exposuresAfterDecision"] == 0
    assert balance["validExposures"] == exp_ref.counts["valid"]
    assert close(balance["crossoverPercent"], 100 * exp_ref.crossover_units() / sum(units.values()))
    metrics_check = checks["metrics"]["metadata"]
    assert metrics_check["missingMetrics"] == []
    assert {m["metric_name"]: (m["earliest_date"], m["latest_date"]) for m in metrics_check["metrics"]} == {
        mid: (iso(day_of(start)), record["endDs"]) for mid in metric_ids
    }
    assert exp_doc["healthCheckStatus"] in ("PASSED", "WARNING", "FAILED")
