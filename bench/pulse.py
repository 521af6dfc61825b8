"""The pulse pipeline at scale from raw objects, beside a hand-written DuckDB query over the same files.

A seeded synthetic experiment (3 groups; metrics: conversion `event_user`, revenue `sum`, a
`ratio`, a 3-step `funnel`, an `event_count`) is generated, written to the events bucket as
ingestion writes it (`events/date=D/<40 hex>.jsonl.gz`, gzip JSON lines in ingestion's exact line
format, one object per batch of `--batch` events and day: services.ingest.store_lines without
the HTTP request and without the event counters, which the pipeline does not read), then:

1. pipeline: `run.execute(plan, refresh="full")` as the function runs it on days just written:
   each day's unit aggregate computed in SQL straight from its raw gzip JSON lines and written to
   S3, then the combination into GroupStatistics records, written to DynamoDB. This is the figure
   of the issue: from raw objects to stored records;
   then the same run with the raw objects already on this machine (the files the hand-written
   query reads, linked in, downloaded before the clock starts): the load's own work when storage
   takes no CPU here, as in AWS, where S3 serves the bytes from other machines (here moto's S3 is
   one Python process on the same cores as DuckDB);
2. compaction: what the hourly schedule does beside the loads (services/pulse/compaction.py):
   every finished day folded into one Parquet file by DuckDB (`COPY`), uploaded, its manifest
   written;
   then the pipeline again (`refresh="full"`) over the compacted days: what a later load reading
   the same days pays (another experiment's first load, a full reload);
3. DuckDB, hand-written: one script of SQL over the same raw objects (downloaded to a temporary
   directory first, not timed in its figure) computing the same per-day unit aggregates, then
   the same combination, down to the same per (result day, metric, group) n, means and
   comoments: the floor for this machine. The bench checks that the pipeline agrees with it.

Storage is expconsole's embedded moto server (`EmbeddedBackend(None)`, the `make serve` backend)
in its own process, so the objects it holds (~280 MB of gzip at full size) count in neither
phase's memory. Every phase runs in its own process and reports its peak RSS (ru_maxrss). Time
spent in storage calls (S3 get/put/list through moto's server, DynamoDB writes) is measured in
the same calls and shown apart. Prints figures, asserts nothing but the agreement of the two
computations (timings depend on the machine). Aim (issue 14): the pipeline within 1.3x of the
hand-written query, under 2 GB peak, under 5 minutes.

    .venv/bin/python bench/pulse.py --quick           # 50k units, 1M events
    .venv/bin/python bench/pulse.py                   # 1M units, 20M events, 14 days
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core")]

DAY_MS = 86_400_000
T0 = 1_767_571_200_000  # 2026-01-05T00:00:00Z, the first day of data
EXP_ID = "bench_checkout"
EXPOSURE = "console::experiment_exposure"
GROUPS = (("control", "Control", 34), ("t1", "One-click checkout", 33), ("t2", "Free shipping", 33))
PRE_WINDOW = 7  # plan.PRE_DAYS
# Event names, by code. The first three are what the metrics read; the next two are noise.
NAMES = ("view", "add_to_cart", "purchase", "page_load", "search", EXPOSURE)
VIEW, CART, PURCHASE, PAGE, SEARCH, EXPOSED = range(6)
BASE_P = (0.45, 0.12, 0.04, 0.25, 0.14)
COUNTRIES = ("US", "FR", "DE", "GB", "BR")
METRICS = (
    {"name": "purchaser", "type": "event_user", "metricEvents": [{"name": "purchase"}]},
    {"name": "revenue", "type": "sum", "metricEvents": [{"name": "purchase"}]},
    {
        "name": "revenue per view",
        "type": "ratio",
        "metricComponentMetrics": [
            {"name": "revenue", "type": "sum"},
            {"name": "view", "type": "event_count"},
        ],
    },
    {
        "name": "checkout funnel",
        "type": "funnel",
        "funnelEventList": [
            {"name": "view", "type": "event_count"},
            {"name": "add_to_cart", "type": "event_count"},
            {"name": "purchase", "type": "event_count"},
        ],
        "funnelCountDistinct": "users",
    },
)
PRIMARY = [{"name": m["name"], "type": m["type"]} for m in METRICS]
SECONDARY = [{"name": "add_to_cart", "type": "event_count"}]
# The DuckDB columns of each metric's record, in the record's order (x, pre x) or (m, d, pre m, pre d).
METRIC_COLUMNS = {
    "purchaser::event_user": ["conv_x", "conv_p"],
    "revenue::sum": ["rev_xw", "rev_pw"],
    "revenue per view::ratio": ["rev_xw", "view_xw", "rev_pw", "view_pw"],
    "checkout funnel::funnel": ["fun_x", "fun_p"],
    "add_to_cart::event_count": ["cart_xw", "cart_pw"],
}
WINSORIZED_COLUMNS = ("rev_x", "rev_p", "view_x", "view_p", "cart_x", "cart_p")


def _ds(day: int) -> str:
    return dt.datetime.fromtimestamp((T0 + day * DAY_MS) / 1000, dt.UTC).date().isoformat()


def _peak_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # Linux: KiB


def _env_for_backend(endpoint: str) -> None:
    from expconsole_tools.local.backend import LOCAL_BUCKET, LOCAL_TABLE, use_backend

    use_backend(endpoint, LOCAL_TABLE, LOCAL_BUCKET)
    os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"


class Timer:
    """Seconds spent inside wrapped functions (storage calls), by label.

    Calls made outside the main thread (the run fetching the next day's objects while DuckDB
    works on the current one) are counted under `<label> ahead`: they overlap the main thread's
    work, so they are not on the run's critical path and not subtracted from it."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def wrap(self, label: str, fn: Callable[..., Any], materialise: bool = False) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            key = label if threading.current_thread() is threading.main_thread() else f"{label} ahead"
            try:
                out = fn(*args, **kwargs)
                return iter(list(out)) if materialise else out
            finally:
                self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - start
                self.calls[key] = self.calls.get(key, 0) + 1

        return wrapper

    def total(self, *labels: str) -> float:
        return sum(self.seconds.get(label, 0.0) for label in labels)


def _time_storage(timer: Timer) -> None:
    """Wrap the S3 functions every pulse module calls through `s3.<name>` (module attribute), and
    the Spill's concurrent downloads (wall time of each batch, not the sum over its threads)."""
    from expconsole.services.pulse import engine
    from expconsole.store import s3

    s3.get = timer.wrap("s3", s3.get)  # get_if_exists calls it: counted once
    s3.put_object = timer.wrap("s3", s3.put_object)
    s3.put_file = timer.wrap("s3", s3.put_file)
    s3.keys = timer.wrap("s3", s3.keys, materialise=True)
    s3.delete_objects = timer.wrap("s3", s3.delete_objects)
    engine.Spill.fetch = timer.wrap("s3", engine.Spill.fetch)  # type: ignore[method-assign]


# --- phase: storage -------------------------------------------------------------------------------------


def phase_storage(_args: argparse.Namespace) -> dict[str, Any]:
    from expconsole_tools.local.backend import EmbeddedBackend

    backend = EmbeddedBackend(None)
    endpoint = backend.start()
    print(f"ENDPOINT {endpoint}", flush=True)
    sys.stdin.read()  # until the parent closes our stdin
    backend.stop()
    return {"peak_mb": _peak_mb()}


# --- phase: generate (entities, then events written as ingestion writes them) --------------------------


def _create_entities(start_ms: int) -> None:
    """Metrics and the experiment through the handlers, on a clock set to the data's time."""
    from expconsole.services import entities
    from tests.conftest import Caller, register_test_keys

    register_test_keys()  # the key Caller presents
    clock = {"now": T0 - 3_600_000}
    entities.now_ms = lambda: clock["now"]  # type: ignore[assignment]
    metrics, experiments = Caller("metrics"), Caller("experiments")
    for body in METRICS:
        status, out = metrics("POST", "/console/v1/metrics", body)
        if status != 201:
            raise SystemExit(f"metric {body['name']}: {status} {out}")
    status, out = experiments(
        "POST",
        "/console/v1/experiments",
        {
            "name": "bench checkout",
            "id": EXP_ID,
            "groups": [{"id": g, "name": name, "size": size} for g, name, size in GROUPS],
            "controlGroupID": GROUPS[0][0],
            "primaryMetrics": PRIMARY,
            "secondaryMetrics": SECONDARY,
        },
    )
    if status != 201:
        raise SystemExit(f"experiment: {status} {out}")
    clock["now"] = start_ms
    status, out = experiments("PUT", f"/console/v1/experiments/{EXP_ID}/start")
    if status != 200 or out["data"]["startTime"] != start_ms:
        raise SystemExit(f"start: {status} {out}")


_G: dict[str, Any] = {}  # the generated events, shared with the forked writers


def _generate(args: argparse.Namespace) -> dict[str, Any]:
    """Events as arrays sorted by time: unit, event code, timestamp, metadata variant, value."""
    import numpy as np

    rng = np.random.default_rng(args.seed)
    units, days, pre = args.units, args.days, args.pre_days
    t_end = T0 + days * DAY_MS
    group = rng.choice(len(GROUPS), units, p=[g[2] / 100 for g in GROUPS]).astype(np.int8)
    # First exposure: front-loaded over the experiment's days, any time of the day.
    weights = 0.8 ** np.arange(days - pre)
    e_day = pre + rng.choice(days - pre, units, p=weights / weights.sum())
    e_ts = T0 + e_day * DAY_MS + rng.integers(0, DAY_MS, units)
    # Exposure events: the first, repeats later (same group; 0.5% of units cross to another
    # group), 1% exposures to another experiment and 0.05% to an unknown group (health only).
    repeats = rng.poisson(0.6, units)
    r_unit = np.repeat(np.arange(units), repeats)
    r_ts = e_ts[r_unit] + (rng.random(r_unit.size) * (t_end - e_ts[r_unit])).astype(np.int64)
    r_meta = group[r_unit].astype(np.int64)
    cross = rng.random(r_unit.size) < 0.005
    r_meta[cross] = (r_meta[cross] + 1) % len(GROUPS)
    n_other = units // 100
    n_unknown = max(units // 2000, 1)
    o_unit = rng.integers(0, units, n_other + n_unknown)
    o_ts = T0 + pre * DAY_MS + rng.integers(0, (days - pre) * DAY_MS, o_unit.size)
    o_meta = np.concatenate([3 + rng.integers(0, 3, n_other), np.full(n_unknown, 6)])
    x_unit = np.concatenate([np.arange(units), r_unit, o_unit])
    x_ts = np.concatenate([e_ts, r_ts, o_ts])
    x_meta = np.concatenate([group.astype(np.int64), r_meta, o_meta])
    # The other events: heavy-tailed counts per unit summing exactly to the target.
    target = max(args.events - x_unit.size, 0)
    rate = rng.gamma(1.2, 1.0, units)
    counts = rng.multinomial(target, rate / rate.sum())
    unit = np.repeat(np.arange(units, dtype=np.int64), counts)
    # 25% in the 7 days before the unit's exposure (CUPED's pre-period), the rest after it.
    before = rng.random(unit.size) < 0.25
    u_e = e_ts[unit]
    lo = np.maximum(T0, u_e - PRE_WINDOW * DAY_MS)
    frac = rng.random(unit.size)
    ts = np.where(before, lo + frac * (u_e - lo), u_e + frac * (t_end - u_e)).astype(np.int64)
    ts = np.minimum(ts, t_end - 1)
    # Event names; after exposure t1 buys 10% more often, t2 spends 5% more per purchase.
    g = group[unit]
    post = ts >= u_e
    cum = np.cumsum(BASE_P)
    draw = rng.random(unit.size) * cum[-1]
    boost = np.where(post & (g == 1), BASE_P[PURCHASE] * 0.10, 0.0)
    event = np.searchsorted(cum, draw, side="right").astype(np.int8)
    event[(draw >= cum[CART]) & (draw < cum[PURCHASE] + boost)] = PURCHASE
    event = np.minimum(event, SEARCH)
    value = np.round(rng.lognormal(3.2, 0.9, unit.size) * np.where(post & (g == 2), 1.05, 1.0), 2)
    meta = rng.integers(0, 500, unit.size)
    all_unit = np.concatenate([unit, x_unit])
    all_ts = np.concatenate([ts, x_ts])
    order = np.argsort(all_ts, kind="stable")
    out = {
        "unit": all_unit[order],
        "ts": all_ts[order],
        "event": np.concatenate([event, np.full(x_unit.size, EXPOSED, np.int8)])[order],
        "meta": np.concatenate([meta, x_meta])[order],
        "value": np.concatenate([value, np.zeros(x_unit.size)])[order],
    }
    out["day_bounds"] = np.searchsorted(out["ts"], T0 + np.arange(days + 1) * DAY_MS)
    return out


_META_VARIANTS: dict[int, list[str]] = {
    VIEW: [f'{{"page":"/p/{i}"}}' for i in range(500)],
    CART: [f'{{"quantity":{1 + i % 3},"sku":"sku-{i}"}}' for i in range(500)],
    PURCHASE: [f'{{"currency":"USD","sku":"sku-{i}"}}' for i in range(500)],
    PAGE: [f'{{"path":"/c/{i}"}}' for i in range(500)],
    SEARCH: [f'{{"q":"term {i}"}}' for i in range(500)],
    EXPOSED: [
        *(f'{{"experiment":"{EXP_ID}","group":"{g}"}}' for g, _, _ in GROUPS),
        *(f'{{"experiment":"other_experiment","group":"{g}"}}' for g, _, _ in GROUPS),
        f'{{"experiment":"{EXP_ID}","group":"ghost"}}',
    ],
}


def _write_range(task: tuple[int, int, int, int]) -> tuple[int, int]:
    """Objects for events [a, b) of one day, batches of `batch` lines: (objects, gzip bytes)."""
    from expconsole.services import ingest
    from expconsole.store import s3

    day, a, b, batch = task
    ds = _ds(day)
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode  # ingestion's encoder
    units = _G["unit"][a:b].tolist()
    stamps = _G["ts"][a:b].tolist()
    events = _G["event"][a:b].tolist()
    metas = _G["meta"][a:b].tolist()
    values = _G["value"][a:b].tolist()
    objects = size = 0
    for start in range(0, b - a, batch):
        end = min(start + batch, b - a)
        tail = f',"source":"webhook","receivedTime":{stamps[end - 1] + 2000}}}'
        lines = []
        for i in range(start, end):
            e, u = events[i], units[i]
            head = (
                f'{{"event":"{NAMES[e]}","user":{{"userID":"u{u:07d}","country":"{COUNTRIES[u % 5]}"}}'
                f',"timestamp":{stamps[i]},"metadata":{_META_VARIANTS[e][metas[i]]}'
            )
            lines.append(f'{head},"value":{values[i]!r}{tail}' if e == PURCHASE else head + tail)
        for line in (lines[0], lines[-1]):  # the same bytes as ingestion's dumps of the parsed line
            if dumps(json.loads(line)) != line:
                raise SystemExit(f"line format differs from ingestion's: {line}")
        body = s3.encode(lines)
        name = ingest.object_name(f"bench-{day}-{a + start}", ds)
        s3.put(s3.object_key(ds, name), body)
        objects += 1
        size += len(body)
    return objects, size


def _reset_clients() -> None:
    from expconsole import aws

    aws.reset()


def phase_generate(args: argparse.Namespace) -> dict[str, Any]:
    import multiprocessing

    start_ms = T0 + args.pre_days * DAY_MS
    _create_entities(start_ms)
    t0 = time.perf_counter()
    _G.update(_generate(args))
    t1 = time.perf_counter()
    bounds = _G["day_bounds"].tolist()
    step = args.batch * 50
    tasks: list[Any] = [
        (day, a, min(a + step, bounds[day + 1]), args.batch)
        for day in range(args.days)
        for a in range(bounds[day], bounds[day + 1], step)
    ]
    tasks.sort(key=lambda t: t[1] - t[2])
    write: Callable[[Any], tuple[int, int]] = _write_range
    with multiprocessing.get_context("fork").Pool(args.workers, initializer=_reset_clients) as pool:
        done = list(pool.imap_unordered(write, tasks))
    t2 = time.perf_counter()
    return {
        "events": int(_G["ts"].size),
        "exposure_events": int((_G["event"] == EXPOSED).sum()),
        "objects": sum(d[0] for d in done),
        "gzip_bytes": sum(d[1] for d in done),
        "generate_s": t1 - t0,
        "write_s": t2 - t1,
        "peak_mb": _peak_mb(),
        "children_peak_mb": _peak_mb(resource.RUSAGE_CHILDREN),
    }


# --- phase: pipeline ----------------------------------------------------------------------------------------


def phase_compaction(args: argparse.Namespace) -> dict[str, Any]:
    """The schedule's compaction of every finished day the experiment reads."""
    from expconsole.services.pulse import compaction

    now = T0 + args.days * DAY_MS
    days = [_ds(day) for day in range(args.days)]
    timer = Timer()
    _time_storage(timer)
    base_mb = _peak_mb()
    t0 = time.perf_counter()
    pending = compaction.pending_days(days)
    written = compaction.compact_days(pending, now)
    seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "days": len(written),
        "s3_s": timer.total("s3"),
        "calls": timer.calls,
        "base_mb": base_mb,
        "peak_mb": _peak_mb(),
    }


def phase_local(args: argparse.Namespace) -> dict[str, Any]:
    """The pipeline over the raw days, their objects already local: `Spill.fetch` links the copies the
    hand-written query reads (downloaded first, untimed) instead of getting them from S3. Listings,
    manifests, the days' aggregates and the records still go through storage."""
    import os as _os

    from expconsole.services.pulse import engine
    from expconsole.store import s3

    target = Path(args.work, "raw")
    t0 = time.perf_counter()
    files, size = _fetch_raw(target)
    fetch_s = time.perf_counter() - t0
    fetch_from_s3 = engine.Spill.fetch

    def fetch(self: engine.Spill, keys: list[str], workers: int = 16) -> list[Path]:
        local = {k: target / k.removeprefix(s3.PREFIX) for k in keys if k.endswith(".jsonl.gz")}
        for key, source in local.items():
            copy = self.path(key)
            copy.parent.mkdir(parents=True, exist_ok=True)
            if not copy.exists():
                _os.link(source, copy)  # a hard link: the run's forget() removes the link, not the file
            with self._lock:
                self._fetched[key] = copy
        others = [k for k in keys if k not in local]
        if others:
            fetch_from_s3(self, others, workers)
        with self._lock:
            return [self._fetched[k] for k in keys]

    engine.Spill.fetch = fetch  # type: ignore[method-assign]
    result = phase_pipeline(args, records="local.json")
    return {**result, "fetch_s": fetch_s, "files": files, "parquet_bytes": size}


def phase_compacted(args: argparse.Namespace) -> dict[str, Any]:
    """The pipeline again, over the compacted days."""
    return phase_pipeline(args, records="compacted.json")


def phase_pipeline(args: argparse.Namespace, records: Any = "pipeline.json") -> dict[str, Any]:
    from expconsole import kinds
    from expconsole.services.pulse import run

    now = T0 + args.days * DAY_MS
    plan = run.plan_for(kinds.EXPERIMENT, EXP_ID, now)
    timer = Timer()
    _time_storage(timer)
    run.put_day = timer.wrap("dynamodb", run.put_day)
    run.aggregate_day = timer.wrap("aggregate_day", run.aggregate_day)
    analyse = timer.wrap("analyse", run.analyse)
    peaks: dict[str, float] = {}

    def analyse_noting_peak(*a: Any, **k: Any) -> Any:
        peaks["days"] = _peak_mb()  # the peak so far: reading and aggregating the days
        return analyse(*a, **k)

    run.analyse = analyse_noting_peak
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    base_mb = _peak_mb()
    t0 = time.perf_counter()
    analysis, result_days = run.execute(plan, now=now, refresh="full")
    seconds = time.perf_counter() - t0
    if args.profile:
        profiler.disable()
        profiler.dump_stats(args.profile)
    health = analysis.health
    assert health is not None
    out = records
    records: dict[str, Any] = {
        "_health": {
            "valid": health.exposures.get("valid", 0),
            "unknownGroup": health.exposures.get("unknownGroup", 0),
            "exposed": health.exposed_units,
            "crossover": health.crossover_units,
        }
    }
    records |= {
        f"{r.ds}|{r.metricID}|{r.groupID}": {
            "n": r.n,
            "means": r.means,
            "m2": [r.comoments[i][i] for i in range(len(r.means))],
            "pre": r.preNonzero,
        }
        for day in analysis.days
        for r in day.records
    }
    Path(args.work, out).write_text(json.dumps(records))
    return {
        "seconds": seconds,
        "s3_s": timer.total("s3"),
        "s3_ahead_s": timer.total("s3 ahead"),
        "dynamodb_s": timer.total("dynamodb"),
        "aggregate_s": timer.total("aggregate_day"),
        "analyse_s": timer.total("analyse"),
        "result_days": len(result_days),
        "atoms": len(plan.atoms),
        "records": len(records) - 1,
        "calls": timer.calls,
        "exposed": health.exposed_units,
        "base_mb": base_mb,
        "days_peak_mb": peaks.get("days", 0.0),
        "peak_mb": _peak_mb(),
    }


# --- phase: DuckDB ------------------------------------------------------------------------------------------


def _fetch_raw(target: Path) -> tuple[int, int]:
    from expconsole.store import s3

    files = size = 0
    for key in s3.keys(s3.PREFIX):
        if not key.endswith(".jsonl.gz"):
            continue
        path = target / key.removeprefix(s3.PREFIX)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as out:
            s3.download(key, out)
        files += 1
        size += path.stat().st_size
    return files, size


def duckdb_sql(
    json_glob: str, out_dir: str, start_ms: int, cutoff_ms: int, first_result: int, last_day: int
) -> list[str]:
    """The statements, in order. Days are epoch day numbers (ts // 86400000)."""
    groups = ", ".join(f"'{g}'" for g, _, _ in GROUPS)
    step_a = [
        # The events read once from the gzip JSON lines, the columns the metrics need.
        f"""CREATE TABLE ev AS SELECT * FROM (
              SELECT event, "timestamp" AS ts, json_extract_string("user", '$.userID') AS unit,
                CASE WHEN json_type(value) IN ('BIGINT', 'UBIGINT', 'DOUBLE')
                  THEN CAST(value AS DOUBLE) END AS vn,
                CAST(metadata AS VARCHAR) AS metadata
              FROM read_json('{json_glob}', format = 'newline_delimited', compression = 'gzip',
                columns = {{event: 'VARCHAR', timestamp: 'BIGINT', user: 'JSON', value: 'JSON',
                           metadata: 'JSON'}}))
            WHERE ts < {cutoff_ms} AND unit IS NOT NULL""",
        # The experiment's exposures from its start (valid or not: health counts them).
        f"""CREATE TABLE exp_rows AS
            SELECT unit, ts, grp FROM (
              SELECT unit, ts, json_extract_string(metadata, '$.group') AS grp,
                     json_extract_string(metadata, '$.experiment') AS experiment
              FROM ev WHERE event = '{EXPOSURE}')
            WHERE experiment = '{EXP_ID}' AND ts >= {start_ms}""",
        # Per day and unit: the first valid exposure of the day (time, group).
        f"""CREATE TABLE day_exp AS
            SELECT unit, ts // {DAY_MS} AS day, min(ts) AS exp_ts, arg_min(grp, ts) AS exp_group
            FROM exp_rows WHERE grp IN ({groups}) GROUP BY ALL""",
        # Per day and unit, per atom: count n and sum s over the day, np/sp at or after the
        # day's exposure (aggregate_day's units table; atoms: purchase count and value, view
        # count, add_to_cart count).
        f"""CREATE TABLE day_units AS
            WITH m AS (
              SELECT e.unit, e.ts // {DAY_MS} AS day, e.event, e.ts, coalesce(e.vn, 0) AS vn, x.exp_ts
              FROM ev e LEFT JOIN day_exp x ON x.unit = e.unit AND x.day = e.ts // {DAY_MS}
              WHERE e.event IN ('purchase', 'view', 'add_to_cart')),
            agg AS (
              SELECT unit, day,
                count(*) FILTER (WHERE event = 'purchase') AS n_purchase,
                count(*) FILTER (WHERE event = 'purchase' AND ts >= exp_ts) AS np_purchase,
                coalesce(sum(vn) FILTER (WHERE event = 'purchase'), 0) AS s_purchase,
                coalesce(sum(vn) FILTER (WHERE event = 'purchase' AND ts >= exp_ts), 0) AS sp_purchase,
                count(*) FILTER (WHERE event = 'view') AS n_view,
                count(*) FILTER (WHERE event = 'view' AND ts >= exp_ts) AS np_view,
                count(*) FILTER (WHERE event = 'add_to_cart') AS n_cart,
                count(*) FILTER (WHERE event = 'add_to_cart' AND ts >= exp_ts) AS np_cart
              FROM m GROUP BY unit, day)
            SELECT coalesce(a.unit, x.unit) AS unit, coalesce(a.day, x.day) AS day, x.exp_ts, x.exp_group,
              coalesce(n_purchase, 0) AS n_purchase, coalesce(np_purchase, 0) AS np_purchase,
              coalesce(s_purchase, 0) AS s_purchase, coalesce(sp_purchase, 0) AS sp_purchase,
              coalesce(n_view, 0) AS n_view, coalesce(np_view, 0) AS np_view,
              coalesce(n_cart, 0) AS n_cart, coalesce(np_cart, 0) AS np_cart
            FROM agg a FULL JOIN day_exp x ON a.unit = x.unit AND a.day = x.day""",
        # Stored as Parquet per day, as the pipeline stores its day aggregates.
        f"COPY day_units TO '{out_dir}' (FORMAT parquet, PARTITION_BY (day), COMPRESSION zstd)",
    ]
    chain_steps = ("view", "add_to_cart", "purchase")

    def chain(rows: str, out: str) -> str:
        """Users-mode funnel: the earliest ordered completion time per unit over `rows`."""
        ctes = [
            f"s0 AS (SELECT unit, min(ts) AS t FROM {rows} WHERE event = '{chain_steps[0]}' GROUP BY unit)"
        ]
        for i, name in enumerate(chain_steps[1:], 1):
            ctes.append(
                f"s{i} AS (SELECT r.unit, min(r.ts) AS t FROM {rows} r JOIN s{i - 1} p ON p.unit = r.unit"
                f" WHERE r.event = '{name}' AND r.ts >= p.t GROUP BY r.unit)"
            )
        return f"CREATE TABLE {out} AS WITH {', '.join(ctes)} SELECT unit, t FROM s{len(chain_steps) - 1}"

    post_cols = ("n_purchase", "s_purchase", "n_view", "n_cart")
    step_b = [
        # The unit's first valid exposure over all days decides everything else.
        """CREATE TABLE first_exp AS
           SELECT unit, min(exp_ts) AS e_ts, arg_min(exp_group, exp_ts) AS grp, min(day) AS e_day
           FROM day_units WHERE exp_ts IS NOT NULL GROUP BY unit""",
        # Pre-period (CUPED): whole days e_day-7 .. e_day-1.
        f"""CREATE TABLE pre AS
            SELECT d.unit, {", ".join(f"sum(d.{c}) AS {c}" for c in post_cols)}
            FROM day_units d JOIN first_exp f USING (unit)
            WHERE d.day < f.e_day AND d.day >= f.e_day - {PRE_WINDOW} GROUP BY d.unit""",
        # Post-exposure per day: the whole day after the exposure day, np/sp on it.
        f"""CREATE TABLE post_day AS
            SELECT d.unit, d.day, {
            ", ".join(
                f"CASE WHEN d.day > f.e_day THEN d.{c} ELSE d.{c[0]}p{c[1:]} END AS {c}" for c in post_cols
            )
        }
            FROM day_units d JOIN first_exp f USING (unit) WHERE d.day >= f.e_day""",
        # Funnel rows (the three step events) of exposed units, post and pre.
        f"""CREATE TABLE fun_rows AS
            SELECT e.unit, e.event, e.ts, e.ts // {DAY_MS} AS day, f.e_ts, f.e_day
            FROM ev e JOIN first_exp f USING (unit) WHERE e.event IN ('view', 'add_to_cart', 'purchase')""",
        "CREATE VIEW fun_post AS SELECT * FROM fun_rows WHERE ts >= e_ts",
        f"CREATE VIEW fun_pre AS SELECT * FROM fun_rows WHERE day < e_day AND day >= e_day - {PRE_WINDOW}",
        chain("fun_post", "funnel_post"),
        chain("fun_pre", "funnel_pre"),
        # Cumulative post-exposure sums per (result day, exposed unit).
        f"""CREATE TABLE grid AS
            WITH days AS (SELECT range AS d FROM range({first_result}, {last_day + 1})),
            g AS (SELECT f.unit, f.grp, f.e_day, days.d FROM first_exp f JOIN days ON days.d >= f.e_day),
            j AS (SELECT g.*, {", ".join(f"coalesce(p.{c}, 0) AS {c}" for c in post_cols)}
                  FROM g LEFT JOIN post_day p ON p.unit = g.unit AND p.day = g.d)
            SELECT d, unit, grp, {", ".join(f"sum({c}) OVER w AS {c}" for c in post_cols)}
            FROM j WINDOW w AS (PARTITION BY unit ORDER BY d ROWS UNBOUNDED PRECEDING)""",
        # Unit values of the metrics (before winsorization).
        f"""CREATE TABLE vals AS
            SELECT g.d, g.grp,
              (g.n_purchase > 0)::DOUBLE AS conv_x, (coalesce(p.n_purchase, 0) > 0)::DOUBLE AS conv_p,
              g.s_purchase::DOUBLE AS rev_x, coalesce(p.s_purchase, 0)::DOUBLE AS rev_p,
              g.n_view::DOUBLE AS view_x, coalesce(p.n_view, 0)::DOUBLE AS view_p,
              g.n_cart::DOUBLE AS cart_x, coalesce(p.n_cart, 0)::DOUBLE AS cart_p,
              (fp.t IS NOT NULL AND fp.t // {DAY_MS} <= g.d)::DOUBLE AS fun_x,
              (fr.t IS NOT NULL)::DOUBLE AS fun_p
            FROM grid g LEFT JOIN pre p USING (unit) LEFT JOIN funnel_post fp USING (unit)
            LEFT JOIN funnel_pre fr USING (unit)""",
        # Winsorization: the linear 99.9th percentile of the non-zero values of the day's units.
        f"""CREATE TABLE thr AS SELECT d, {
            ", ".join(f"quantile_cont({c}, 0.999) FILTER (WHERE {c} <> 0) AS {c}" for c in WINSORIZED_COLUMNS)
        } FROM vals GROUP BY d""",
        # Health: exposures valid or to an unknown group, exposed units, units seen in 2+ groups.
        f"""CREATE TABLE health AS SELECT
            (SELECT count(*) FROM exp_rows WHERE grp IN ({groups})) AS valid,
            (SELECT count(*) FROM exp_rows WHERE grp IS NULL OR grp NOT IN ({groups})) AS unknown_group,
            (SELECT count(*) FROM first_exp) AS exposed,
            (SELECT count(*) FROM (SELECT unit FROM exp_rows WHERE grp IN ({groups})
                                   GROUP BY unit HAVING count(DISTINCT grp) > 1)) AS crossover""",
        f"""CREATE TABLE wvals AS SELECT v.d, v.grp, v.conv_x, v.conv_p, v.fun_x, v.fun_p, {
            ", ".join(
                f"least(v.{c}, coalesce(t.{c}, v.{c})) AS {c[:-2]}_{c[-1]}w" for c in WINSORIZED_COLUMNS
            )
        } FROM vals v JOIN thr t USING (d)""",
    ]
    # Per (result day, group): n, means and comoments (Σ(a-ā)(b-b̄)) of each metric's columns.
    aggs = ["count(*) AS n"]
    for mi, cols in enumerate(METRIC_COLUMNS.values()):
        for ci, c in enumerate(cols):
            aggs.append(f"avg({c}) AS m{mi}_mean{ci}")
            aggs.append(f"var_pop({c}) * count(*) AS m{mi}_m2{ci}")
        pre_cols = cols[len(cols) // 2 :]
        aggs.append(f"count(*) FILTER (WHERE {' OR '.join(f'{c} <> 0' for c in pre_cols)}) AS m{mi}_pre")
    step_b.append(f"CREATE TABLE stats AS SELECT d, grp, {', '.join(aggs)} FROM wvals GROUP BY d, grp")
    return [*step_a, "-- combine", *step_b]


def phase_duckdb(args: argparse.Namespace) -> dict[str, Any]:
    import duckdb

    target = Path(args.work, "raw")
    t0 = time.perf_counter()
    files, size = (0, 0) if target.exists() else _fetch_raw(target)
    fetch_s = time.perf_counter() - t0
    start_ms = T0 + args.pre_days * DAY_MS
    cutoff = T0 + args.days * DAY_MS
    day0 = T0 // DAY_MS
    statements = duckdb_sql(
        f"{target}/date=*/*.jsonl.gz",
        str(Path(args.work, f"duckdb-days-{args.threads}")),
        start_ms,
        cutoff,
        day0 + args.pre_days,
        day0 + args.days - 1,
    )
    split = statements.index("-- combine")
    con = duckdb.connect()
    con.execute(f"SET threads = {args.threads}")
    con.execute(f"SET temp_directory = '{Path(args.work, 'duckdb.tmp')}'")
    con.execute("SET memory_limit = '2GB'")  # the pipeline's default (engine.memory_limit)
    t1 = time.perf_counter()
    for sql in statements[:split]:
        con.execute(sql)
    t2 = time.perf_counter()
    for sql in statements[split + 1 :]:
        con.execute(sql)
    rows = con.execute("SELECT * FROM stats ORDER BY d, grp").fetchall()
    names = [d[0] for d in con.description]
    health = con.execute("SELECT valid, unknown_group, exposed, crossover FROM health").fetchone()
    t3 = time.perf_counter()
    assert health is not None
    out: dict[str, Any] = {
        "_health": dict(zip(("valid", "unknownGroup", "exposed", "crossover"), health, strict=True))
    }
    for row in rows:
        rec = dict(zip(names, row, strict=True))
        ds = _ds(rec["d"] - day0)
        for mi, (mid, cols) in enumerate(METRIC_COLUMNS.items()):
            out[f"{ds}|{mid}|{rec['grp']}"] = {
                "n": rec["n"],
                "means": [rec[f"m{mi}_mean{ci}"] for ci in range(len(cols))],
                "m2": [rec[f"m{mi}_m2{ci}"] for ci in range(len(cols))],
                "pre": rec[f"m{mi}_pre"],
            }
    Path(args.work, f"duckdb-{args.threads}.json").write_text(json.dumps(out))
    return {
        "fetch_s": fetch_s,
        "files": files,
        "parquet_bytes": size,
        "day_units_s": t2 - t1,
        "combine_s": t3 - t2,
        "seconds": t3 - t1,
        "peak_mb": _peak_mb(),
    }


# --- orchestration ------------------------------------------------------------------------------------------

PHASES = {
    "storage": phase_storage,
    "generate": phase_generate,
    "compaction": phase_compaction,
    "compacted": phase_compacted,
    "local": phase_local,
    "pipeline": phase_pipeline,
    "duckdb": phase_duckdb,
}


def _child_argv(args: argparse.Namespace, phase: str, **extra: Any) -> list[str]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--phase", phase, "--work", args.work]
    for name in ("units", "events", "days", "pre_days", "seed", "batch", "workers", "threads", "profile"):
        value = extra.get(name, getattr(args, name))
        if value is not None:
            argv += [f"--{name.replace('_', '-')}", str(value)]
    return argv


def _run_phase(args: argparse.Namespace, phase: str, **extra: Any) -> dict[str, Any]:
    start = time.perf_counter()
    proc = subprocess.run(_child_argv(args, phase, **extra), capture_output=True, text=True, check=False)
    results = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not results:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-6000:])
        raise SystemExit(f"phase {phase} failed (exit {proc.returncode})")
    print(f"  {phase}: {time.perf_counter() - start:.1f} s wall (process included)", flush=True)
    return dict(json.loads(results[-1].removeprefix("RESULT ")))


def _compare(pipeline: dict[str, Any], duck: dict[str, Any]) -> tuple[int, float, list[str]]:
    """(records compared, max relative difference, problems)."""
    problems = []
    worst = 0.0
    if pipeline["_health"] != duck["_health"]:
        problems.append(f"health: pipeline {pipeline['_health']} vs DuckDB {duck['_health']}")
    for key in sorted((set(pipeline) | set(duck)) - {"_health"}):
        a, b = pipeline.get(key), duck.get(key)
        if a is None or b is None:
            problems.append(f"{key}: only in {'DuckDB' if a is None else 'the pipeline'}")
            continue
        if a["n"] != b["n"] or a["pre"] != b["pre"]:
            problems.append(f"{key}: n {a['n']} vs {b['n']}, pre {a['pre']} vs {b['pre']}")
            continue
        for x, y in zip(a["means"] + a["m2"], b["means"] + b["m2"], strict=True):
            diff = abs(x - y) / max(abs(x), abs(y), 1e-6)
            worst = max(worst, diff)
            if diff > 1e-6:
                problems.append(f"{key}: {a} vs {b}")
                break
    return len(set(pipeline) & set(duck)) - 1, worst, problems


def _duck_threads(args: argparse.Namespace) -> list[int]:
    return [args.threads] if args.main_only else sorted({args.threads, 1}, reverse=True)


def _rate(events: int, seconds: float) -> str:
    return f"{events / seconds:>12,.0f}" if seconds > 0 else f"{'-':>12}"


def orchestrate(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="pulse-bench-") as work:
        args.work = work
        storage = subprocess.Popen(
            _child_argv(args, "storage"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        try:
            assert storage.stdout is not None and storage.stdin is not None
            line = storage.stdout.readline()
            if not line.startswith("ENDPOINT "):
                raise SystemExit(f"storage backend did not start: {line!r}")
            endpoint = line.split()[1]
            _env_for_backend(endpoint)
            print(
                f"pulse bench: {args.units:,} units, ~{args.events:,} events over {args.days} days "
                f"(seed {args.seed}); experiment starts on day {args.pre_days}; 3 groups; "
                "metrics: conversion, revenue, revenue/view, 3-step funnel, add_to_cart count"
            )
            print(f"storage: expconsole's embedded moto server, own process ({endpoint})", flush=True)
            gen = _run_phase(args, "generate")
            events = gen["events"]
            written = f"{gen['objects']:,} objects, {gen['gzip_bytes'] / 2**20:,.1f} MiB gzip JSON lines"
            print(f"  {events:,} events ({gen['exposure_events']:,} exposures), {written}", flush=True)
            pipe = _run_phase(args, "pipeline")
            local = _run_phase(args, "local")
            compacting = None if args.main_only else _run_phase(args, "compaction")
            again = None if args.main_only else _run_phase(args, "compacted")
            ducks = [_run_phase(args, "duckdb", threads=t) for t in _duck_threads(args)]
        finally:
            out, _ = storage.communicate(timeout=120)  # closes its stdin: it stops
        store = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[7:])
        pipeline_records = json.loads(Path(work, "pipeline.json").read_text())
        checks = [
            _compare(pipeline_records, json.loads(Path(work, f"duckdb-{t}.json").read_text()))
            for t in _duck_threads(args)
        ]
        if local is not None:
            checks.append(_compare(json.loads(Path(work, "local.json").read_text()), pipeline_records))
        if again is not None:
            checks.append(_compare(json.loads(Path(work, "compacted.json").read_text()), pipeline_records))

    load = os.getloadavg()
    print(f"  load average now {load[0]:.1f} (1 min), {load[2]:.1f} (15 min) on {os.cpu_count()} CPUs")
    pipe_storage = pipe["s3_s"] + pipe["dynamodb_s"]
    rows: list[tuple[str, float, float | None, float | None]] = [
        ("generate (numpy)", gen["generate_s"], None, None),
        (
            f"format+gzip+put ({args.workers} procs)",
            gen["write_s"],
            None,
            gen["children_peak_mb"],
        ),
    ]
    rows += [
        ("pipeline run.execute (raw days)", pipe["seconds"], pipe["seconds"] - pipe_storage, pipe["peak_mb"]),
        ("  aggregate_day (from JSON)", pipe["aggregate_s"], None, None),
        ("  analyse", pipe["analyse_s"], None, None),
        (f"  S3 ({pipe['calls'].get('s3', 0)} calls)", pipe["s3_s"], None, None),
        (
            f"  S3 ahead ({pipe['calls'].get('s3 ahead', 0)} calls, overlapped)",
            pipe["s3_ahead_s"],
            None,
            None,
        ),
        ("  DynamoDB write_day", pipe["dynamodb_s"], None, None),
    ]
    if local is not None:
        local_storage = local["s3_s"] + local["dynamodb_s"]
        rows += [
            (
                "pipeline, raw objects local",
                local["seconds"],
                local["seconds"] - local_storage,
                local["peak_mb"],
            ),
            ("  aggregate_day (from JSON)", local["aggregate_s"], None, None),
            ("  analyse", local["analyse_s"], None, None),
        ]
    if compacting is not None and again is not None:
        again_storage = again["s3_s"] + again["dynamodb_s"]
        rows += [
            (
                f"compaction ({compacting['days']} days, apart)",
                compacting["seconds"],
                compacting["seconds"] - compacting["s3_s"],
                compacting["peak_mb"],
            ),
            (f"  S3 ({compacting['calls'].get('s3', 0)} calls)", compacting["s3_s"], None, None),
            (
                "pipeline again (compacted days)",
                again["seconds"],
                again["seconds"] - again_storage,
                again["peak_mb"],
            ),
            ("  aggregate_day (from Parquet)", again["aggregate_s"], None, None),
            ("  analyse", again["analyse_s"], None, None),
        ]
    for duck in ducks:
        threads = duck["threads"]
        rows += [
            (f"DuckDB, {threads} thread{'s' if threads > 1 else ''}", duck["seconds"], None, duck["peak_mb"]),
            ("  per-day unit aggregates", duck["day_units_s"], None, None),
            ("  combine to group stats", duck["combine_s"], None, None),
        ]
    print()
    print(f"{'phase':<34}{'seconds':>9}{'events/s':>13}{'w/o storage s':>15}{'events/s':>13}{'peak MB':>9}")
    for label, seconds, own, peak in rows:
        own_text = f"{own:>15.2f}{_rate(events, own)}" if own is not None else f"{'':>15}{'':>13}"
        peak_text = f"{peak:>9,.0f}" if peak is not None else ""
        print(f"{label:<34}{seconds:>9.2f}{_rate(events, seconds)}{own_text}{peak_text}")
    fetch = next(d for d in [*ducks, local] if d and d["files"])
    print(
        f"\n(the hand-written DuckDB query reads {fetch['files']} gzip JSON-lines objects,"
        f" {fetch['parquet_bytes'] / 2**20:,.1f} MiB, from a local directory; downloading them took"
        f" {fetch['fetch_s']:.2f} s, not counted above)"
    )
    duck = ducks[0]
    own = pipe["seconds"] - pipe_storage
    print(
        f"pipeline / hand-written DuckDB ({duck['threads']} threads):"
        f" {pipe['seconds'] / duck['seconds']:.2f}x,"
        f" {own / duck['seconds']:.2f}x without storage calls;"
        f" against the query plus its download: {pipe['seconds'] / (duck['seconds'] + fetch['fetch_s']):.2f}x"
        " (aim: within 1.3x)"
    )
    if local is not None:
        print(
            f"pipeline with the raw objects local / hand-written DuckDB ({duck['threads']} threads), the same"
            f" files: {local['seconds'] / duck['seconds']:.2f}x"
            f" ({local['seconds']:.1f} s vs {duck['seconds']:.1f} s; aim: within 1.3x)"
        )
    if compacting is not None and again is not None:
        ratio = f"compacted days / raw days: {again['seconds'] / pipe['seconds']:.2f}x"
        saved = pipe["seconds"] - again["seconds"]
        print(
            f"{ratio} ({again['seconds']:.1f} s vs {pipe['seconds']:.1f} s); the compaction"
            f" ({compacting['seconds']:.1f} s) pays back after {compacting['seconds'] / saved:.1f} later"
            " loads of the same days"
            if saved > 0
            else f"{ratio}: compaction does not pay"
        )
    if len(ducks) > 1:
        print(
            f"pipeline / DuckDB (1 thread): {pipe['seconds'] / ducks[-1]['seconds']:.2f}x, "
            f"{own / ducks[-1]['seconds']:.2f}x without storage calls"
        )
    print(
        f"pipeline peak RSS {pipe['peak_mb']:,.0f} MB (aim: under 2048 MB): {pipe['base_mb']:,.0f} MB after"
        f" imports, {pipe['days_peak_mb']:,.0f} MB before analyse (the days' aggregation);"
        f" storage server peak {store['peak_mb']:,.0f} MB"
    )
    health = pipeline_records["_health"]
    print(
        f"exposures: {health['valid']:,} valid, {health['unknownGroup']:,} to an unknown group; "
        f"{health['exposed']:,} units exposed, {health['crossover']:,} in 2+ groups"
    )
    labels = [f"DuckDB {d['threads']} thread{'s' if d['threads'] > 1 else ''}" for d in ducks]
    labels += [] if local is None else ["objects local vs from S3"]
    labels += [] if again is None else ["compacted days vs raw days"]
    for (count, worst, problems), label in zip(checks, labels, strict=True):
        verdict = "agree" if not problems else f"DIFFER in {len(problems)} records"
        print(
            f"check ({label}): {count} records ({pipe['result_days']} days"
            f" x 5 metrics x 3 groups): n, means, comoments, preNonzero and the health counts {verdict}"
            f" (max relative difference {worst:.1e})"
        )
        for problem in problems[:5]:
            print("  " + problem)
    if any(problems for _, _, problems in checks):
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--units", type=int, default=1_000_000)
    parser.add_argument("--events", type=int, default=20_000_000)
    parser.add_argument("--days", type=int, default=14, help="days of data (default 14)")
    parser.add_argument(
        "--pre-days", type=int, default=4, help="days of data before the experiment starts (default 4)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="50,000 units and 1,000,000 events")
    parser.add_argument("--batch", type=int, default=2000, help="events per object (default 2000)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="writer processes")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="DuckDB threads")
    parser.add_argument(
        "--main-only",
        action="store_true",
        help="only the pipeline (from S3, then with the objects local) and DuckDB with --threads",
    )
    parser.add_argument("--profile", help="write a cProfile of run.execute to this file")
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.units, args.events = 50_000, 1_000_000
    if not 0 < args.pre_days < args.days:
        parser.error("--pre-days must be between 1 and --days - 1")
    if args.phase is None:
        orchestrate(args)
        return
    if args.phase != "storage":
        _env_for_backend(os.environ["AWS_ENDPOINT_URL"])
    result = PHASES[args.phase](args)
    result.setdefault("threads", args.threads)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
