"""Time of GET /experiments/{id}/pulse_results for 5 groups x 50 metrics with every option on.

Prints the whole handler time beside the time to read the stored statistics alone (moto in
process: its latency is not DynamoDB's, so the difference, "compute", is the figure to watch;
the aim is under 50 ms). Prints, never asserts. `--runs N` (default 20).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from moto import mock_aws  # noqa: E402

GROUPS = 5
METRICS = 50
UNITS = 2000
DS = "2026-03-01"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "TABLE_NAME": "expconsole-bench",
    }.items():
        os.environ[name] = value
    os.environ.pop("AWS_ENDPOINT_URL", None)

    from expconsole import aws, kinds
    from expconsole.services import results
    from expconsole.stats import CupedStatistic
    from expconsole.store import dynamo, group_stats
    from tests.conftest import Caller, register_test_keys

    aws.reset()
    with mock_aws():
        dynamo.create_table()
        register_test_keys()  # the key Caller presents
        experiments, fn = Caller("experiments"), Caller("results")
        groups = [{"name": f"G{i}", "id": f"g{i}", "size": 20} for i in range(GROUPS)]
        metric_ids = [f"ev{i}::event_count" for i in range(METRICS)]
        refs = [{"name": m.split("::")[0], "type": "event_count"} for m in metric_ids]
        status, out = experiments(
            "POST",
            "/console/v1/experiments",
            {
                "name": "bench experiment",
                "id": "bench",
                "groups": groups,
                "controlGroupID": "g0",
                "primaryMetrics": refs[:10],
                "secondaryMetrics": refs[10:30],
                "otherMetrics": refs[30:],
                "sequentialTesting": True,
                "analyticsType": "bayesian",
            },
        )
        assert status == 201, out
        experiments("PUT", "/console/v1/experiments/bench/start")
        rng = np.random.default_rng(0)
        records = []
        for mid in metric_ids:
            for g in groups:
                p = rng.poisson(5, UNITS).astype(float)
                x = p + rng.normal(0, 1, UNITS)
                stat = CupedStatistic.from_values(x, p)
                records.append(
                    results.record_of(
                        stat, kind=kinds.EXPERIMENT, entity_id="bench", ds=DS, metric_id=mid, group_id=g["id"]
                    )
                )
        group_stats.put_day(kinds.EXPERIMENT, "bench", DS, records)

        query = (
            "control=g0&test=g1&cuped=true&confidence=95&applyBonferroniPerVariant=true"
            "&applyBonferroniPerMetric=true&bonferroniPrimaryMetricWeight=0.6"
            "&applyBenjaminiHochbergPerMetric=true&applyBenjaminiHochbergPerVariant=true"
            "&benjaminiPrimaryMetricsOnly=false"
        )
        fn("GET", "/console/v1/experiments/bench/pulse_results", query=query)  # warm up
        handler, read = [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            status, body = fn("GET", "/console/v1/experiments/bench/pulse_results", query=query)
            handler.append(time.perf_counter() - t0)
            assert status == 200, body
            t0 = time.perf_counter()
            group_stats.latest_day(kinds.EXPERIMENT, "bench")
            group_stats.read_day(kinds.EXPERIMENT, "bench", DS)
            read.append(time.perf_counter() - t0)
        entries = sum(len(body["data"][k]) for k in ("primaryMetrics", "secondaryMetrics", "otherMetrics"))
        print(
            f"pulse_results: {GROUPS} groups x {METRICS} metrics, CUPED, sequential, Bayesian, BH both ways"
        )
        print(f"  {entries} entries returned, {len(records)} statistics read, {args.runs} runs")
        for label, xs in (("handler", handler), ("read stats", read)):
            print(
                f"  {label:<11} median {statistics.median(xs) * 1000:7.1f} ms   min {min(xs) * 1000:7.1f} ms"
            )
        compute = (statistics.median(handler) - statistics.median(read)) * 1000
        print(f"  compute     ~{compute:.1f} ms (median handler - median read; aim < 50 ms)")


if __name__ == "__main__":
    main()
