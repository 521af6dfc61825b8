"""The loop closed: the real SDK assigns, the app logs through it, pulse reads what the SDK did.

4,000 users are assigned to an experiment by `statsig` (pure Python) against the local server;
each checks a gate and, with a probability that depends on its group, logs `purchase` through the
SDK. After `load_pulse`, `pulse_results` must count exactly the SDK's assignments per group and
detect the effect; the gate's `checksPerHour` reflects the SDK's checks. All of it runs with
every host but loopback unreachable for Python's sockets: nothing needs Statsig's hosts.

The size is for the effect, not the protocol: buying 20% vs 30% over some 2,000 users a group is
a difference of about 7 standard errors (sqrt(.2*.8/2000 + .3*.7/2000) = 0.0136), so the
asserted p < 1e-4 and an interval above 0 hold with a wide margin (the draws are seeded).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from tests.e2e.client import ApiClient, uid
from tests.e2e.sdk_clients import guarded_network, pure_sdk, wait_for_document

USERS = 4_000
BUY = {"Control": 0.20, "Test": 0.30}


def ok(response: Any, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return response.json()["data"]


def test_sdk_assignments_and_events_reach_pulse(api: ApiClient, server: Any) -> None:
    from statsig import StatsigEvent, StatsigUser

    s = uid()
    event = f"purchase_{s}"
    gate = ok(api.post("/console/v1/gates", json={
        "name": f"checkout gate {s}", "rules": [{"name": "half", "passPercentage": 50, "conditions": []}],
    }), 201)["id"]  # fmt: skip
    exp = ok(api.post("/console/v1/experiments", json={
        "name": f"sdk loop {s}",
        "groups": [{"name": "Control", "size": 50, "parameterValues": {"cta": "Buy"}},
                   {"name": "Test", "size": 50, "parameterValues": {"cta": "Buy now"}}],
        "primaryMetrics": [{"name": event, "type": "event_count"}, {"name": event, "type": "event_dau"}],
    }), 201)  # fmt: skip
    exp_id = exp["id"]
    group_ids = {g["name"]: g["id"] for g in exp["groups"]}
    ok(api.put(f"/console/v1/experiments/{exp_id}/start"))
    wait_for_document(server.url, server.server_secret, [gate, exp_id], active=[exp_id])

    rng = random.Random(5)
    assigned: Counter[str] = Counter()
    with guarded_network() as asked, pure_sdk(server.url, server.server_secret) as sdk:
        for i in range(USERS):
            user = StatsigUser(user_id=f"{s}-u{i}", custom_ids={"stableID": f"{s}-s{i}"})
            group = sdk.get_experiment(user, exp_id).group_name
            assigned[group] += 1
            sdk.check_gate(user, gate)
            if rng.random() < BUY[group]:
                sdk.log_event(StatsigEvent(user, event, value=1))
            if i % 200 == 199:
                sdk.flush()  # the SDK drops events past its queue's bound when logging outpaces flushing
        sdk.flush()
    assert asked == [], f"the SDK asked for hosts other than the console: {sorted(set(asked))}"
    assert set(assigned) == {"Control", "Test"}

    load = ok(api.post(f"/console/v1/experiments/{exp_id}/load_pulse?wait=true", json={}, timeout=300))
    assert load["finishedState"] == "success", load
    results = ok(api.get(f"/console/v1/experiments/{exp_id}/pulse_results",
                         params={"control": group_ids["Control"], "test": group_ids["Test"]}))  # fmt: skip
    entries = {e["metricID"]: e for e in results["primaryMetrics"]}
    for entry in entries.values():
        assert entry["control_units"] == assigned["Control"], entry
        assert entry["test_units"] == assigned["Test"], entry
    buyers = entries[f"{event}::event_dau"]
    assert buyers["value"] > 0 and buyers["p_value"] < 1e-4, buyers
    assert buyers["confidence_interval"]["lower"] > 0

    checked = ok(api.get(f"/console/v1/gates/{gate}"))
    assert checked["checksPerHour"] == round(USERS / 24, 2)
    listed = ok(api.get("/console/v1/gates", params={"passRate": "INBETWEEN", "limit": 1000}))
    assert gate in {g["id"] for g in listed}
