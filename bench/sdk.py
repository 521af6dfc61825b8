"""The Statsig SDK protocol at size: spec build, document size, downloads, evaluation.

A world of `--gates` gates, `--experiments` experiments and `--configs` dynamic configs (plus
segments, layers and holdouts in proportion) is created through the console's own function
handlers, in this process, on moto (as the functional tests do): every stored document is the
one the API writes. Then:

1. **build**: `documents.snapshot()` (the table queries), the pure `specs.build(snapshot)` and
   `v2.v1_to_v2`, timed, and one `documents.rebuild()`; the documents' sizes raw and gzip'd; the
   build and sizes again at `--scale-to` entities (the stored documents copied, ids renamed:
   creating thousands of entities on moto takes too long), against Lambda's 6 MB response limit
   and the 4 MB gzip size past which `functions/sdk/app.py` answers a redirect to S3.
2. **download**: `expconsole serve --ephemeral` in a child process; the world's table items are
   copied into its backend (the backend's own DynamoDB endpoint, the way `expconsole keys` writes
   to a running server, so they are journaled like any write), one console write through the API
   starts the server's spec build, and once the served document names every entity,
   `--downloads` interleaved rounds of: the baseline, v1 with `sinceTime` (`has_updates: false`:
   same route, key check and S3 check, 45 bytes), v1 in full (gzip), v2 in full, v1 with
   `If-None-Match` (304), and a console `GET /console/v1/gates/<id>`.
3. **evaluate**: the document the server serves, evaluated for `--users` users by our
   `Evaluator`, by `statsig` (pure Python) and by `statsig-python-core` (Rust core) pointed at the
   same server, in this process; every answer (value, rule id) compared as it is timed.

Prints figures and ratios; asserts nothing about time (exit 1 only if the evaluators disagree).

    .venv/bin/python bench/sdk.py                       # 1,000 gates, 200 experiments, 50 configs; 5,000
    .venv/bin/python bench/sdk.py --scale-to 0 --downloads 10 --users 30   # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core")]

LAMBDA_LIMIT = 6 * 1024 * 1024
# The baseline: the same route, key check and S3 freshness check, answering a few bytes.
BASELINE = "baseline: v1 sinceTime (has_updates false)"
TOKEN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{22}(?![A-Za-z0-9])")  # a rule or group id
TABLE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "TABLE_NAME": "expconsole-bench",
    "EVENTS_BUCKET": "expconsole-bench-events",
}

# --- the world: request bodies ------------------------------------------------------------------


def cond(ctype: str, operator: str | None = None, target: Any = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": ctype}
    if operator is not None:
        out["operator"] = operator
    if target is not None:
        out["targetValue"] = target
    return {**out, **extra}


# Condition families a real console holds, in turn (the segments and gates they name exist).
CONDITIONS: list[Callable[[int], list[dict[str, Any]]]] = [
    lambda i: [cond("user_id", "any", [f"user-{n}" for n in range(i % 7, 400, 7)])],
    lambda i: [cond("email", "str_ends_with_any", ["@corp.io", f"@team{i % 5}.example.com"])],
    lambda i: [cond("email", "str_matches", r"^[ab].*@example\.(com|org)$")],
    lambda i: [cond("custom_field", "gt", 18 + i % 40, field="age")],
    lambda i: [cond("custom_field", "any", ["pro", "team"], field="plan")],
    lambda i: [cond("app_version", "version_gte", f"1.{i % 10}.0")],
    lambda i: [cond("browser_name", "any", ["Chrome", "Chrome Mobile"])],
    lambda i: [cond("os_name", "any", ["iOS", "Mac OS X"]), cond("os_version", "version_gte", "14")],
    lambda i: [cond("country", "any", ["DE", "US", "FR"])],
    lambda i: [cond("locale", "str_starts_with_any", ["en", "fr"])],
    lambda i: [cond("ip_address", "any", ["8.8.8.8", "1.0.16.1"])],
    lambda i: [cond("unit_id", "any", [f"c{n}" for n in range(i % 3, 10, 3)], customID="companyID")],
    lambda i: [cond("time", "after", 1_577_836_800_000)],
    lambda i: [cond("url", "str_contains_any", ["/checkout", "/pricing"])],
    lambda i: [cond("passes_segment", target=f"bench_seg_{i % 4}")],
    lambda i: [cond("fails_segment", target="bench_seg_ids")],
    lambda i: [cond("passes_gate", target=f"bench_gate_{i - 1:05d}")] if i else [],
]


@dataclass
class World:
    """The requests that create a world, in order, and the names the served document must hold."""

    requests: list[tuple[str, str, str, dict[str, Any] | None]] = field(default_factory=list)
    gates: list[str] = field(default_factory=list)
    experiments: list[str] = field(default_factory=list)
    configs: list[str] = field(default_factory=list)
    layers: list[str] = field(default_factory=list)

    def add(self, function: str, method: str, path: str, body: dict[str, Any] | None = None) -> None:
        self.requests.append((function, method, path, body))

    @property
    def entities(self) -> int:
        return len(self.gates) + len(self.experiments) + len(self.configs)


def world(gates: int, experiments: int, configs: int) -> World:
    """Segments, gates, layers, experiments (some in layers, some targeted), holdouts, configs."""
    w = World()
    for n, condition in enumerate(
        [
            cond("email", "str_ends_with_any", ["@corp.io"]),
            cond("country", "any", ["DE", "FR"]),
            cond("custom_field", "any", ["pro"], field="plan"),
            cond("app_version", "version_gt", "1.2.0"),
        ]
    ):
        rule = {"name": "members", "passPercentage": 100, "conditions": [condition]}
        body = {"name": f"bench_seg_{n}", "type": "rule_based", "rules": [rule], "description": "bench"}
        w.add("segments", "POST", "/console/v1/segments", body)
    w.add("segments", "POST", "/console/v1/segments", {"name": "bench_seg_ids", "type": "id_list"})

    for i in range(gates):
        name = f"bench_gate_{i:05d}"
        rules = [
            {"name": "targeted", "passPercentage": 100, "conditions": CONDITIONS[i % len(CONDITIONS)](i)}
        ]
        if i % 3 == 0:
            rules.append(
                {"name": "staging", "passPercentage": 100, "conditions": [], "environments": ["staging"]}
            )
        rules.append({"name": "rollout", "passPercentage": (i * 7) % 100, "conditions": []})
        body = {
            "name": name,
            "description": f"Rollout of feature {i} to the users who qualify.",
            "tags": ["bench", f"team-{i % 8}"],
            "isEnabled": i % 50 != 49,
            "rules": rules,
        }
        w.add("gates", "POST", "/console/v1/gates", body)
        if i % 40 == 39:
            w.add("gates", "PUT", f"/console/v1/gates/{name}/launch", None)
        w.gates.append(name)

    in_layers = experiments // 5
    layer_count = max(1, in_layers // 4)
    for n in range(layer_count):
        name = f"bench_layer_{n:04d}"
        params = [
            {"name": "color", "type": "string", "defaultValue": "grey"},
            {"name": "size", "type": "number", "defaultValue": 1},
            {"name": "copy", "type": "string", "defaultValue": "Buy now"},
        ]
        w.add(
            "layers", "POST", "/console/v1/layers", {"name": name, "idType": "userID", "parameters": params}
        )
        w.layers.append(name)
    for j in range(experiments):
        name = f"bench_exp_{j:05d}"
        three = j % 2 == 0
        sizes = [34, 33, 33] if three else [50, 50]
        layered = j < in_layers
        groups = []
        for g, size in enumerate(sizes):
            if layered:
                values: dict[str, Any] = {"color": ["grey", "red", "blue"][g], "size": g + 1}
            else:
                values = {"variant": g, "discount": g * 5, "headline": f"Headline {g}", "enabled": g > 0}
            groups.append({"name": ["Control", "Test", "Test B"][g], "size": size, "parameterValues": values})
        body: dict[str, Any] = {
            "name": name,
            "description": "Does the new flow lift purchases?",
            "hypothesis": "Fewer steps, more purchases.",
            "tags": ["bench"],
            "groups": groups,
        }
        if layered:
            body.update(layerID=w.layers[j % layer_count], allocation=20)
        elif j % 5 == 1:
            body["allocation"] = 50
        if j % 4 == 1:
            body["targetingGateID"] = w.gates[(j * 13) % max(1, gates)] if gates else None
        if j % 7 == 3:
            body["inlineTargetingRules"] = [
                {
                    "name": "markets",
                    "passPercentage": 100,
                    "conditions": [cond("country", "any", ["US", "DE"])],
                }
            ]
        w.add("experiments", "POST", "/console/v1/experiments", body)
        if j % 10 != 9:
            w.add("experiments", "PUT", f"/console/v1/experiments/{name}/start", {})
        w.experiments.append(name)

    if experiments:
        holdouts = [
            {
                "name": "bench_holdout_a",
                "passPercentage": 5,
                "experimentIDs": w.experiments[in_layers : in_layers + 30],
            },
            {
                "name": "bench_holdout_b",
                "passPercentage": 10,
                "gateIDs": w.gates[:20],
                "layerIDs": w.layers[:1],
            },
            {
                "name": "bench_holdout_c",
                "passPercentage": 2,
                "experimentIDs": w.experiments[in_layers + 30 : in_layers + 50],
                "targetingGateID": w.gates[0] if gates else None,
            },
        ]
        for body in holdouts:
            w.add("holdouts", "POST", "/console/v1/holdouts", body)

    for k in range(configs):
        name = f"bench_config_{k:05d}"
        rules: list[dict[str, Any]] = [
            {
                "name": "pros",
                "passPercentage": 100,
                "conditions": [cond("custom_field", "any", ["pro"], field="plan")],
                "returnValue": {"limit": 100, "price": 8, "banner": "Thanks for being pro"},
            }
        ]
        if k % 2 == 0:
            rules.append(
                {
                    "name": "split",
                    "passPercentage": 100,
                    "conditions": [],
                    "returnValue": {"limit": 10, "price": 10},
                    "variants": [
                        {"name": "a", "passPercentage": 25, "returnValue": {"limit": 20, "price": 9}},
                        {"name": "b", "passPercentage": 75, "returnValue": {"limit": 30, "price": 11}},
                    ],
                }
            )
        body = {
            "name": name,
            "description": "Limits and prices per plan.",
            "defaultValue": {"limit": 10, "price": 10, "banner": "", "features": ["a", "b", "c"]},
            "rules": rules,
        }
        w.add("dynamic_configs", "POST", "/console/v1/dynamic_configs", body)
        w.configs.append(name)
    ids = [f"user-{n}" for n in range(0, 4000, 3)]
    for start in range(0, len(ids), 1000):
        body = {"ids": ids[start : start + 1000]}
        w.add("segments", "PATCH", "/console/v1/segments/bench_seg_ids/id_list", body)
    return w


# --- in-process creation on moto ----------------------------------------------------------------


@contextmanager
def moto_table() -> Iterator[None]:
    """moto's in-memory AWS with our table, as tests/conftest.py's `aws` fixture sets it up."""
    from moto import mock_aws

    from expconsole import aws as aws_clients
    from expconsole.store import dynamo, s3
    from tests.conftest import register_test_keys

    saved = {name: os.environ.get(name) for name in [*TABLE_ENV, "AWS_ENDPOINT_URL"]}
    os.environ.update(TABLE_ENV)
    os.environ.pop("AWS_ENDPOINT_URL", None)
    aws_clients.reset()
    try:
        with mock_aws():
            dynamo.create_table()
            s3.create_bucket()
            register_test_keys()  # the key Caller presents
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        aws_clients.reset()


@contextmanager
def no_transaction_backup() -> Iterator[list[str]]:
    """moto deep-copies the whole table before each item of a transaction, to undo a failed one:
    O(table) per write, hours for a world of 5,000 entities. The bench's requests all succeed
    (it stops at the first that does not), so the copy is skipped; a failed transaction, which
    could then leave a partial write behind, is recorded and stops the bench."""
    import copy
    from types import SimpleNamespace

    import moto.dynamodb.models as models
    from moto.dynamodb.models.table import Table

    failed: list[str] = []
    real_copy, real_transact = models.copy, models.DynamoDBBackend.transact_write_items

    def transact(self: Any, items: list[dict[str, Any]]) -> None:
        try:
            real_transact(self, items)
        except Exception as exc:
            failed.append(repr(exc))
            raise

    models.copy = SimpleNamespace(  # type: ignore[assignment]
        deepcopy=lambda obj, *a: obj if isinstance(obj, Table) else copy.deepcopy(obj, *a)
    )
    models.DynamoDBBackend.transact_write_items = transact  # type: ignore[method-assign]
    try:
        yield failed
    finally:
        models.copy = real_copy
        models.DynamoDBBackend.transact_write_items = real_transact  # type: ignore[method-assign]


def create(w: World) -> float:
    """Send every request of the world to its function's handler; the seconds it took."""
    from tests.conftest import Caller

    callers: dict[str, Any] = {}
    started = time.perf_counter()
    with no_transaction_backup() as failed:
        for function, method, path, body in w.requests:
            caller = callers.setdefault(function, Caller(function))
            status, answer = caller(method, path, body)
            if status >= 300:
                raise SystemExit(f"{method} {path} answered {status}: {answer}")
            if failed:
                raise SystemExit(f"{method} {path}: a transaction failed without moto's undo: {failed}")
    return time.perf_counter() - started


def table_items() -> list[dict[str, Any]]:
    """Every item of the table (low-level form), API keys left out."""
    from expconsole import aws, config

    items: list[dict[str, Any]] = []
    paginator = aws.client("dynamodb").get_paginator("scan")
    for page in paginator.paginate(TableName=config.table_name(), ConsistentRead=True):
        items.extend(item for item in page["Items"] if not item["PK"]["S"].startswith("KEY#"))
    return items


def median_of(repeat: int, run: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


@dataclass
class BuildFigures:
    entities: int
    how: str
    create_s: float | None
    snapshot_s: float | None
    build_s: float
    v2_s: float
    rebuild_s: float | None
    v1_raw: int
    v1_gz: int
    v2_raw: int
    v2_gz: int
    counts: str


@dataclass
class Created:
    snap: Any
    items: list[dict[str, Any]]
    create_s: float
    snapshot_s: float
    rebuild_s: float


def create_world(w: World, repeat: int) -> Created:
    """Create the world on moto; time `documents.snapshot()` (the table queries) and one
    `documents.rebuild()` (queries, build, gzip, S3 puts); the snapshot and the table's items."""
    from expconsole.services.sdk import documents

    with moto_table():
        create_s = create(w)
        snapshot_s, snap = median_of(repeat, documents.snapshot)
        rebuild_s, _ = median_of(1, documents.rebuild)
        items = table_items()
    return Created(snap, items, create_s, snapshot_s, rebuild_s)


def scaled(snap: Any, copies: int) -> Any:
    """The snapshot's stored documents `copies` times: every id and reference (`bench_...`)
    renamed per copy, every rule and group id (random tokens) replaced by a fresh one."""
    import secrets
    import string
    from dataclasses import asdict

    from expconsole.services.sdk import specs

    text = json.dumps(asdict(snap))
    tokens = set(re.findall(r'"(?:id|baseID)": "([A-Za-z0-9]{22})"', text))
    alphabet = string.ascii_letters + string.digits
    merged: dict[str, list[Any]] = {kind: [] for kind in asdict(snap)}
    for n in range(copies):
        fresh = {token: "".join(secrets.choice(alphabet) for _ in range(22)) for token in tokens}
        copy = text if n == 0 else text.replace('"bench_', f'"bench{n}_')
        if n:
            copy = TOKEN.sub(lambda m, fresh=fresh: fresh.get(m[0], m[0]), copy)
        for kind, docs in json.loads(copy).items():
            merged[kind].extend(docs)
    return specs.Snapshot(**merged)


def build_figures(entities: int, how: str, snap: Any, repeat: int, created: Created | None) -> BuildFigures:
    """Time the pure build and v1 → v2 on a snapshot; the documents' sizes."""
    from expconsole.services.sdk import documents, specs
    from expconsole.services.sdk.v2 import v1_to_v2

    now = int(time.time() * 1000)
    build_s, doc = median_of(repeat, lambda: specs.build(snap, now))
    v2_s, doc2 = median_of(repeat, lambda: v1_to_v2(doc))
    v1_raw = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    v2_raw = json.dumps(doc2, separators=(",", ":"), ensure_ascii=False).encode()
    counts = (
        f"{len(doc['feature_gates'])} feature_gates (segments, holdouts included), "
        f"{len(doc['dynamic_configs'])} dynamic_configs (experiments included), "
        f"{len(doc['layer_configs'])} layer_configs"
    )
    return BuildFigures(
        entities=entities,
        how=how,
        create_s=created.create_s if created else None,
        snapshot_s=created.snapshot_s if created else None,
        build_s=build_s,
        v2_s=v2_s,
        rebuild_s=created.rebuild_s if created else None,
        v1_raw=len(v1_raw),
        # documents._gz is what the build stores: measure exactly those bytes.
        v1_gz=len(documents._gz(doc)),
        v2_raw=len(v2_raw),
        v2_gz=len(documents._gz(doc2)),
        counts=counts,
    )


def print_build(rows: list[BuildFigures]) -> None:
    from tests.conftest import load_function

    inline = load_function("sdk").MAX_INLINE_BYTES  # past it, the download is a redirect to S3
    mb = 1024 * 1024
    print("\n1. spec build (in-process; median of the runs): create = the API requests through the handlers")
    header = ("entities", "world", "create s", "snapshot ms", "build ms", "v1→v2 ms", "rebuild ms")
    print("{:>9} {:<28} {:>9} {:>12} {:>9} {:>9} {:>11}".format(*header))

    def opt(value: float | None, scale: float, fmt: str) -> str:
        return "-" if value is None else format(value * scale, fmt)

    for r in rows:
        print(
            f"{r.entities:>9,} {r.how:<28} {opt(r.create_s, 1, '.1f'):>9} "
            f"{opt(r.snapshot_s, 1e3, '.1f'):>12} "
            f"{r.build_s * 1e3:>9.1f} {r.v2_s * 1e3:>9.1f} {opt(r.rebuild_s, 1e3, '.1f'):>11}"
        )
    print(
        "\n   document sizes (compact JSON; gzip level 6, as stored and served). A Lambda answer of bytes is "
        "base64'd: b64 = 4/3 of the bytes"
    )
    header = ("entities", "v1 raw MB", "v1 gzip MB", "v2 raw MB", "v2 gzip MB", "gzip b64/6MB", "gzip/4MB")
    print("{:>9} {:>10} {:>11} {:>10} {:>11} {:>13} {:>9} {:>12}".format(*header, "raw b64/6MB"))
    for r in rows:
        gz, raw = max(r.v1_gz, r.v2_gz), max(r.v1_raw, r.v2_raw)
        print(
            f"{r.entities:>9,} {r.v1_raw / mb:>10.2f} {r.v1_gz / mb:>11.3f} {r.v2_raw / mb:>10.2f} "
            f"{r.v2_gz / mb:>11.3f} {b64(gz) / LAMBDA_LIMIT:>13.1%} {gz / inline:>9.1%} "
            f"{b64(raw) / LAMBDA_LIMIT:>12.1%}"
        )
    for r in rows:
        print(f"   {r.entities:,} entities: {r.counts}")
        if b64(max(r.v1_raw, r.v2_raw)) > LAMBDA_LIMIT:
            print(
                f"   note: at {r.entities:,} entities a download without `Accept-Encoding: gzip` (answered "
                "un-gzip'd and inline: functions/sdk/app.py compares only the gzip size with its limit) "
                "is over Lambda's 6 MB"
            )


def b64(size: int) -> int:
    return 4 * -(-size // 3)


# --- through the local server -------------------------------------------------------------------


def copy_items(endpoint: str, items: list[dict[str, Any]]) -> float:
    """Write the items into the server's backend table (BatchWriteItem, unprocessed retried)."""
    import boto3

    from expconsole_tools.local.backend import LOCAL_REGION, LOCAL_TABLE

    client = boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name=LOCAL_REGION,
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    started = time.perf_counter()
    for start in range(0, len(items), 25):
        pending: dict[str, Any] = {
            LOCAL_TABLE: [{"PutRequest": {"Item": i}} for i in items[start : start + 25]]
        }
        for attempt in range(10):
            unprocessed = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
            if not unprocessed:
                break
            pending = unprocessed
            time.sleep(0.05 * 2**attempt)
        else:
            raise SystemExit("the backend kept items unprocessed")
    return time.perf_counter() - started


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


def measure_downloads(server: Any, w: World, downloads: int) -> dict[str, Any]:
    import requests

    from tests.e2e.sdk_clients import wait_for_document

    key = server.server_secret
    console = requests.Session()
    console.headers["SERVICE-API-KEY"] = server.api_key
    started = time.perf_counter()
    r = console.post(f"{server.url}/console/v1/gates", json={"name": "bench_trigger"}, timeout=60)
    if r.status_code != 201:
        raise SystemExit(f"the console write that starts the build answered {r.status_code}: {r.text}")
    names = w.gates + w.experiments + w.configs + w.layers + ["bench_trigger"]
    doc = wait_for_document(server.url, key, names, timeout=300)
    served_s = time.perf_counter() - started

    sdk = requests.Session()
    sdk.headers["STATSIG-API-KEY"] = key
    v1 = f"{server.url}/v1/download_config_specs/{key}.json"
    v2 = f"{server.url}/v2/download_config_specs/{key}.json"
    etag = sdk.get(v1, timeout=60).headers["ETag"]
    wire: dict[str, int] = {}

    def get(session: Any, url: str, label: str, **kwargs: Any) -> Callable[[], None]:
        def run() -> None:
            response = session.get(url, timeout=60, **kwargs)
            if response.status_code not in (200, 304):
                raise SystemExit(f"{label} answered {response.status_code}: {response.text[:300]}")
            wire[label] = int(response.headers.get("Content-Length") or len(response.content))

        return run

    requests_made = [
        (BASELINE, sdk, v1, {"params": {"sinceTime": doc["time"]}}),
        ("v1 full (gzip)", sdk, v1, {}),
        ("v2 full (gzip)", sdk, v2, {}),
        ("v1 If-None-Match (304)", sdk, v1, {"headers": {"If-None-Match": etag}}),
        ("console GET /console/v1/gates/<id>", console, f"{server.url}/console/v1/gates/{w.gates[0]}", {}),
    ]
    kinds = {label: get(session, url, label, **kw) for label, session, url, kw in requests_made}
    for run in kinds.values():  # warm the sandboxes and their key caches
        for _ in range(2):
            run()
    times: dict[str, list[float]] = {label: [] for label in kinds}
    for _ in range(downloads):
        for label, run in kinds.items():
            begun = time.perf_counter()
            run()
            times[label].append(time.perf_counter() - begun)
    return {"doc": doc, "served_s": served_s, "times": times, "wire": wire}


def print_downloads(result: dict[str, Any], copy_s: float, items: int, downloads: int) -> None:
    print(
        f"\n2. downloads through the local server ({downloads} of each, interleaved; client time, "
        "body read and un-gzip'd by requests)"
    )
    print(
        f"   {items:,} table items copied into the server's backend in {copy_s:.1f} s; after one console "
        f"write the served document named every entity in {result['served_s']:.1f} s (stream window, "
        "the specs function in its sandbox, table queries, build, S3)"
    )
    times = result["times"]
    base = statistics.median(times[BASELINE])
    print("{:<42} {:>10} {:>9} {:>9} {:>10}".format("request", "bytes", "p50 ms", "p95 ms", "p50/base"))
    for label, values in times.items():
        p50 = statistics.median(values)
        print(
            f"{label:<42} {result['wire'][label]:>10,} {p50 * 1e3:>9.1f} "
            f"{percentile(values, 0.95) * 1e3:>9.1f} {p50 / base:>10.2f}"
        )


# --- evaluation ---------------------------------------------------------------------------------


def measure_evaluation(server: Any, w: World, doc: dict[str, Any], user_count: int) -> bool:
    from statsig_python_core import (
        DynamicConfigEvaluationOptions,
        ExperimentEvaluationOptions,
        FeatureGateEvaluationOptions,
        LayerEvaluationOptions,
    )

    from expconsole.services.sdk.evaluator import Evaluator
    from tests.e2e.sdk_clients import core_sdk, core_user, pure_sdk, pure_user, served_id_lists, users

    lists = served_id_lists(server.url, server.server_secret)
    started = time.perf_counter()
    evaluator = Evaluator(doc, lists)
    compile_ms = (time.perf_counter() - started) * 1e3
    population = users(user_count, seed=3)
    print(
        f"\n3. evaluation of the served document: {user_count} users; our Evaluator built from it in "
        f"{compile_ms:.1f} ms"
    )
    agree = True
    with (
        pure_sdk(server.url, server.server_secret) as pure,
        core_sdk(server.url, server.server_secret) as core,
    ):
        gate_o = FeatureGateEvaluationOptions(disable_exposure_logging=True)
        exp_o = ExperimentEvaluationOptions(disable_exposure_logging=True)
        config_o = DynamicConfigEvaluationOptions(disable_exposure_logging=True)
        layer_o = LayerEvaluationOptions(disable_exposure_logging=True)
        pure_users = [pure_user(u) for u in population]
        core_users = [core_user(u) for u in population]
        for index, user in enumerate(population[:20]):  # warm parser caches (user agents, regexes)
            for name in w.gates[:40]:
                evaluator.check_gate(user, name)
                pure.get_feature_gate(pure_users[index], name, log_exposure=False)
                core.get_feature_gate(core_users[index], name, gate_o)

        def pair(r: Any) -> tuple[Any, Any]:
            return r.value, r.rule_id

        kinds = [
            (
                "gate",
                w.gates,
                lambda u, n: pair(evaluator.check_gate(u, n)),
                lambda u, n: pair(pure.get_feature_gate(u, n, log_exposure=False)),
                lambda u, n: pair(core.get_feature_gate(u, n, gate_o)),
            ),
            (
                "experiment",
                w.experiments,
                lambda u, n: pair(evaluator.get_experiment(u, n)),
                lambda u, n: pair(pure.get_experiment(u, n, log_exposure=False)),
                lambda u, n: pair(core.get_experiment(u, n, exp_o)),
            ),
            (
                "config",
                w.configs,
                lambda u, n: pair(evaluator.get_config(u, n)),
                lambda u, n: pair(pure.get_config(u, n, log_exposure=False)),
                lambda u, n: pair(core.get_dynamic_config(u, n, config_o)),
            ),
            (
                "layer",
                w.layers,
                lambda u, n: _layer(evaluator.get_layer(u, n), "value", "allocated_experiment"),
                lambda u, n: _layer(pure.get_layer(u, n, log_exposure=False), None, "allocated_experiment"),
                lambda u, n: _layer(core.get_layer(u, n, layer_o), None, "allocated_experiment_name"),
            ),
        ]
        header = ("check", "checks", "ours µs", "statsig µs", "core µs", "ours/statsig", "ours/core")
        print("{:<11} {:>8} {:>9} {:>11} {:>9} {:>13} {:>10}".format(*header))
        for kind, names, ours_fn, pure_fn, core_fn in kinds:
            ours, ours_s = _timed(ours_fn, population, names)
            theirs, pure_s = _timed(pure_fn, pure_users, names)
            core_answers, core_s = _timed(core_fn, core_users, names)
            differ = sum(a != b for a, b in zip(ours, theirs, strict=True)) + sum(
                a != b for a, b in zip(ours, core_answers, strict=True)
            )
            checks = len(ours)
            print(
                f"{kind:<11} {checks:>8,} {ours_s / checks * 1e6:>9.1f} {pure_s / checks * 1e6:>11.1f} "
                f"{core_s / checks * 1e6:>9.1f} {ours_s / pure_s:>13.2f} {ours_s / core_s:>10.2f}"
            )
            if differ:
                agree = False
                first = next(
                    i
                    for i, (a, b, c) in enumerate(zip(ours, theirs, core_answers, strict=True))
                    if not a == b == c
                )
                print(
                    f"   {differ} answers differ; first: {names[first % len(names)]}: ours {ours[first]!r}, "
                    f"statsig {theirs[first]!r}, core {core_answers[first]!r}"
                )
    return agree


def _layer(result: Any, value_attr: str | None, allocated: str) -> tuple[Any, Any, Any]:
    values = getattr(result, value_attr) if value_attr else _layer_values(result)
    return values, result.rule_id, getattr(result, allocated) or None


def _layer_values(result: Any) -> Any:
    getter = getattr(result, "get_values", None) or result.get_value
    return getter()


def _timed(check: Any, population: list[Any], names: list[str]) -> tuple[list[Any], float]:
    answers = []
    started = time.perf_counter()
    for user in population:
        for name in names:
            answers.append(check(user, name))
    return answers, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gates", type=int, default=1000)
    parser.add_argument("--experiments", type=int, default=200)
    parser.add_argument("--configs", type=int, default=50)
    parser.add_argument(
        "--scale-to",
        type=int,
        default=5000,
        help="also build from the stored documents copied to about this many entities (0: skip)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="builds timed per world (median)")
    parser.add_argument("--downloads", type=int, default=30)
    parser.add_argument("--users", type=int, default=100)
    args = parser.parse_args()

    from expconsole_tools.local.process import ServeProcess

    main_world = world(args.gates, args.experiments, args.configs)
    print(
        f"world: {len(main_world.gates)} gates, {len(main_world.experiments)} experiments "
        f"({len(main_world.layers)} layers), {len(main_world.configs)} dynamic configs, 5 segments, "
        f"3 holdouts; {len(main_world.requests)} API requests"
    )
    created = create_world(main_world, args.repeat)
    rows = [
        build_figures(main_world.entities, "created via the API handlers", created.snap, args.repeat, created)
    ]
    copies = round(args.scale_to / main_world.entities) if args.scale_to else 0
    if copies > 1:
        big = scaled(created.snap, copies)
        how = f"the stored docs x{copies}, renamed"
        rows.append(build_figures(main_world.entities * copies, how, big, max(1, args.repeat // 2), None))
    print_build(rows)

    log = Path(tempfile.gettempdir()) / f"bench-sdk-serve-{os.getpid()}.log"
    print(f"\n(the server's log: {log})")
    with ServeProcess("--ephemeral", "--port", "0", "--quiet", cwd=ROOT, stderr=log) as server:
        copy_s = copy_items(server.backend_endpoint, created.items)
        result = measure_downloads(server, main_world, args.downloads)
        print_downloads(result, copy_s, len(created.items), args.downloads)
        agree = measure_evaluation(server, main_world, result["doc"], args.users)
    if not agree:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
