"""A pulse load in a fresh interpreter (run by test_pulse_imports.py): prints the modules it loaded.

Not a test module: `python -m tests.functional.pulse_load_process` (AWS variables for moto in its
environment), so that `sys.modules` shows what the pulse function needs and nothing else.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

from moto import mock_aws

from expconsole import kinds
from expconsole.services import entities, ingest
from expconsole.store import dynamo, group_stats, s3
from tests.conftest import Caller, register_test_keys
from tests.functional.pulse_metrics import METRICS

DAY = 86_400_000
START = 1_767_571_200_000 + 6 * 3_600_000  # 2026-01-05T06:00Z
NOW = START + 3 * DAY


def main() -> dict[str, Any]:
    """Create, ingest and load on moto; what the load left in `sys.modules` and the store."""
    clock = {"now": START}
    entities.now_ms = lambda: clock["now"]
    with mock_aws():
        dynamo.create_table()
        s3.create_bucket()
        register_test_keys()
        pulse = Caller("pulse")  # the function under test, imported first
        metrics, experiments = Caller("metrics"), Caller("experiments")
        for body in METRICS:
            status, out = metrics("POST", "/console/v1/metrics", body)
            assert status == 201, out
        refs = [{"name": m["name"], "type": m["type"]} for m in METRICS]
        status, out = experiments(
            "POST",
            "/console/v1/experiments",
            {
                "name": "no numpy",
                "controlGroupID": "c",
                "primaryMetrics": refs,
                "groups": [
                    {"id": "c", "name": "Control", "size": 50},
                    {"id": "t", "name": "Test", "size": 50},
                ],
            },
        )
        assert status == 201, out
        exp_id = out["data"]["id"]
        status, out = experiments("PUT", f"/console/v1/experiments/{exp_id}/start")
        assert status == 200, out
        rng = random.Random(7)
        events = []
        for i in range(200):
            user = {"userID": f"u{i}"}
            t = START + rng.randrange(2 * DAY)
            events.append(
                {
                    "event": "console::experiment_exposure",
                    "user": user,
                    "timestamp": t,
                    "metadata": {"experiment": exp_id, "group": rng.choice("ct")},
                }
            )
            for _ in range(rng.randrange(8)):
                ts = t - 5 * DAY + rng.randrange(7 * DAY)
                if rng.random() < 0.6:
                    events.append(
                        {
                            "event": "view",
                            "user": user,
                            "timestamp": ts,
                            "metadata": {"item": rng.choice("abc")},
                        }
                    )
                else:
                    events.append(
                        {"event": "purchase", "user": user, "timestamp": ts, "value": rng.randrange(1, 90)}
                    )
        ingest.ingest(json.dumps(events), now_ms=NOW)
        clock["now"] = NOW
        status, out = pulse("POST", f"/console/v1/experiments/{exp_id}/load_pulse", query="wait=true")
        assert status == 200 and out["data"]["finishedState"] == "success", out
        status, out = experiments("GET", f"/console/v1/experiments/{exp_id}")
        srm = next(c for c in out["data"]["healthChecks"] if c["type"] == "srm")
        records = group_stats.read_day(
            kinds.EXPERIMENT, exp_id, out["data"]["healthChecks"][0]["metadata"]["lastUpdatedDs"]
        )
        return {
            "modules": sorted(m for m in ("numpy", "scipy", "pyarrow") if m in sys.modules),
            "duckdb": "duckdb" in sys.modules,
            "records": sorted({r.metricID for r in records}),
            "srm_p": srm["metadata"]["p_value"],
        }


if __name__ == "__main__":
    print("RESULT " + json.dumps(main()))
