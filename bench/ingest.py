"""Ingestion throughput: events/second through the ingest handler, in-process on moto.

For batches of 1, 100 and 1,000 events, the handler (auth check, routing, size check, JSON
parse, validation, canonical digest, gzip, S3 put and the counter transaction on moto) is
timed beside a baseline on the same body in the same run: `json.loads` of the body plus gzip
of its events as JSON lines. Prints figures; asserts nothing (timings depend on the machine).
The aim is at least 1/3 of the baseline at 1,000 events. moto's in-process S3 and DynamoDB
are part of the handler's time, so the ratio understates the handler's own speed: moto's
TransactWriteItems deep-copies its tables (tens of ms per call, growing with the table), where
DynamoDB takes a few ms. The last columns therefore also show the rate without the time spent
in the two storage calls (`s3.put`, `event_counters.record`), measured in the same calls.
"""

from __future__ import annotations

import gzip
import json
import time
from typing import Any

import in_process  # noqa: F401  (first: the repository on the path, moto's stand-in environment)

SIZES = (1, 100, 1000)
MIN_SECONDS = 1.5


def _body(n: int, run: int) -> str:
    now = int(time.time() * 1000)
    events = [
        {
            "event": ("purchase", "view", "click", "signup")[i % 4],
            "user": {"userID": f"user-{i % 97}", "stableID": f"dev-{i}", "country": "FR"},
            "timestamp": now - (i * 7919) % 3_600_000,
            "metadata": {"sku": f"sku-{i % 13}", "price": 9.99, "run": run, "i": i},
            "value": i % 5,
        }
        for i in range(n)
    ]
    return json.dumps(events if n > 1 else events[0])


def _baseline(body: str) -> None:
    data = json.loads(body)
    items = data if isinstance(data, list) else [data]
    gzip.compress(("\n".join(json.dumps(e, separators=(",", ":")) for e in items) + "\n").encode(), mtime=0)


def _rate(n: int, fn: Any, bodies: list[str]) -> float:
    start = time.perf_counter()
    done = 0
    while True:
        fn(bodies[done % len(bodies)])
        done += 1
        elapsed = time.perf_counter() - start
        if elapsed >= MIN_SECONDS and done >= 3:
            return done * n / elapsed


def main() -> None:
    from moto import mock_aws

    from expconsole import aws
    from expconsole.store import dynamo, event_counters, s3
    from tests.conftest import LAMBDA_CONTEXT, http_event, load_function, register_test_keys

    aws.reset()
    with mock_aws():
        dynamo.create_table()
        register_test_keys()  # the key http_event presents
        s3.create_bucket()
        handler = load_function("ingest").lambda_handler
        storage = {"s": 0.0}

        def timed(fn: Any) -> Any:
            def wrapper(*args: Any) -> Any:
                start = time.perf_counter()
                try:
                    return fn(*args)
                finally:
                    storage["s"] += time.perf_counter() - start

            return wrapper

        s3.put = timed(s3.put)  # type: ignore[method-assign]
        event_counters.record = timed(event_counters.record)  # type: ignore[method-assign]
        path = "/v1/webhooks/event_webhook"
        counter = {"run": 0}

        def through_handler(body: str) -> None:
            # a distinct body per call, so every call is a new request (no retry short-cut)
            response = handler(http_event("POST", path, body, key_kind="server"), LAMBDA_CONTEXT)
            if response["statusCode"] != 202:
                raise SystemExit(f"ingest failed: {response['statusCode']} {response['body'][:300]}")
            counter["run"] += 1

        print(
            f"{'batch':>6} {'handler ev/s':>14} {'baseline ev/s':>14} {'ratio':>7}"
            f" {'w/o storage ev/s':>17} {'ratio':>7}"
        )
        for n in SIZES:
            bodies = [_body(n, run) for run in range(200 if n < 1000 else 40)]
            through_handler(bodies[0])  # warm: imports, client creation
            storage["s"], counter["run"] = 0.0, 0
            start = time.perf_counter()
            handler_rate = _rate(n, through_handler, bodies[1:])
            total = time.perf_counter() - start
            own_rate = counter["run"] * n / max(total - storage["s"], 1e-9)
            baseline_rate = _rate(n, _baseline, bodies)
            print(
                f"{n:>6} {handler_rate:>14,.0f} {baseline_rate:>14,.0f} {handler_rate / baseline_rate:>7.2f}"
                f" {own_rate:>17,.0f} {own_rate / baseline_rate:>7.2f}"
            )


if __name__ == "__main__":
    main()
