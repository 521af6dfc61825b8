"""The key check's cost per request: `expconsole.api.auth.check` with the key in the sandbox's
cache (a hit) and not (a miss), in-process on moto, beside a baseline measured in the same run.

The baseline is one `GetItem` of the key item (`store.dynamo.get_key`): what a miss adds. The
rows are interleaved over `--rounds` rounds (each row timed for `--calls` calls per round) so
background load falls on them alike; the figure is the median per-call time over the rounds and
its ratio to the baseline's median. A whole request (`GET /console/v1/gates/<id>` through the
gates handler) is timed both ways too, to show the check's share of it.

moto's in-process DynamoDB stands in for the network round trip: in AWS a GetItem takes a few
milliseconds (more than moto's in-process call), so the miss's absolute cost there is larger
and the hit's (no I/O) the same. What the authorizer it replaces cost is not measurable here:
an API Gateway Lambda authorizer is a separate Lambda invocation (its own GetItem inside) for
each key whose verdict API Gateway has not cached, and the SDK routes' authorizer cached none.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import time
from collections.abc import Callable

import in_process  # noqa: F401  (first: the repository on the path, moto's stand-in environment)

BASELINE = "baseline: GetItem of the key item"


def _median_us(run: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        run()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    parser.add_argument("--calls", type=int, default=200, help="calls per row per round (default 200)")
    args = parser.parse_args()

    from moto import mock_aws

    from expconsole.api import auth
    from expconsole.key_hashes import hash_key
    from expconsole.services import keys
    from expconsole.store import dynamo
    from tests.conftest import LAMBDA_CONTEXT, http_event, load_function

    # The handlers print a metrics line (EMF) per request on stdout: kept out of the report.
    with mock_aws(), contextlib.redirect_stdout(io.StringIO()):
        dynamo.create_table()
        plain, _ = keys.create_key("console", "bench")
        key_hash = hash_key(plain)
        event = http_event("GET", "/console/v1/gates", key_kind=None, headers={"service-api-key": plain})
        gates = load_function("gates")
        status = gates.lambda_handler(
            http_event(
                "POST",
                "/console/v1/gates",
                {"name": "bench gate"},
                key_kind=None,
                headers={"service-api-key": plain},
            ),
            LAMBDA_CONTEXT,
        )["statusCode"]
        assert status == 201, status
        read = http_event(
            "GET", "/console/v1/gates/bench_gate", key_kind=None, headers={"service-api-key": plain}
        )

        warm, cold = keys.KeyCache(3600), keys.KeyCache(0)

        def check_with(cache: keys.KeyCache) -> Callable[[], object]:
            def run() -> object:
                keys._cache = cache
                verdict = auth.check(event, "console")
                assert not isinstance(verdict, Exception), verdict
                return verdict

            return run

        def request_with(cache: keys.KeyCache) -> Callable[[], object]:
            def run() -> object:
                keys._cache = cache
                response = gates.lambda_handler(read, LAMBDA_CONTEXT)
                assert response["statusCode"] == 200, response
                return response

            return run

        rows: dict[str, Callable[[], object]] = {
            BASELINE: lambda: dynamo.get_key(key_hash),
            "SHA-256 of the key alone": lambda: hash_key(plain),
            "check(), cache hit": check_with(warm),
            "check(), cache miss": check_with(cold),
            "GET gates/<id>, key cached": request_with(warm),
            "GET gates/<id>, key looked up": request_with(cold),
        }
        for run in rows.values():  # warm up: imports, the cache's entry, moto's first calls
            for _ in range(20):
                run()
        times: dict[str, list[float]] = {label: [] for label in rows}
        for _ in range(args.rounds):
            for label, run in rows.items():
                calls = args.calls if "GET" not in label else max(1, args.calls // 10)
                times[label].append(_median_us(run, calls))
        keys.reset_cache()

    base = statistics.median(times[BASELINE])
    print(f"{'':34} {'median us':>10} {'min us':>9} {'x base':>8}")
    for label, values in times.items():
        median = statistics.median(values)
        print(f"{label:34} {median:10.1f} {min(values):9.1f} {median / base:8.4f}")
    hit, miss = (
        statistics.median(times["check(), cache hit"]),
        statistics.median(times["check(), cache miss"]),
    )
    cached, looked = (
        statistics.median(times["GET gates/<id>, key cached"]),
        statistics.median(times["GET gates/<id>, key looked up"]),
    )
    print(
        f"\nA miss costs {miss - hit:.0f} us more than a hit ({(miss - hit) / base:.2f}x the GetItem "
        f"baseline); a whole request {looked / cached:.2f}x with the key looked up as with it cached."
    )


if __name__ == "__main__":
    main()
