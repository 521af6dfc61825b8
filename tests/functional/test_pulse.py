"""The pulse pipeline on moto: stored statistics per day against an independent computation.

Time is controlled: `entities.now_ms` is a settable clock (so `start`, `make_decision` and the
load's own time are chosen), events are written with `ingest.ingest(body, now_ms=...)`, and
loads run with an explicit `now`. The experiment starts on Tuesday 2026-03-10 06:00 UTC and
most loads run on 2026-03-19 12:00 UTC, ten result days later.

Every stored `GroupStatistics` (n, means and centred co-moments of the unit values and their
pre-period values, preNonzero) is compared with numpy over the unit values that
tests/pulse_reference.py computes from the raw events, to 1e-9 relative.
"""

from __future__ import annotations

import datetime as dt
import io
import itertools
import json
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from expconsole import kinds
from expconsole.services import entities, ingest, pulse_loads
from expconsole.services.pulse import athena, daydata, run
from expconsole.store import group_stats, s3
from tests.conftest import LAMBDA_CONTEXT, Caller, load_function
from tests.functional.pulse_metrics import METRICS
from tests.pulse_reference import (
    DAY_MS,
    EXPOSURE,
    Exposures,
    GroupValues,
    Registry,
    analyse_day,
    day_of,
    exposures,
    moments,
    srm_p_value,
)

S = day_of(int(dt.datetime(2026, 3, 10, tzinfo=dt.UTC).timestamp() * 1000))  # Tuesday
START = S * DAY_MS + 6 * 3_600_000
NOW = (S + 9) * DAY_MS + 12 * 3_600_000
HOUR = 3_600_000
GROUPS = [
    {"name": "Control", "id": "ctl", "size": 34},
    {"name": "Test one", "id": "t1", "size": 33},
    {"name": "Test two", "id": "t2", "size": 33},
]
EXP = "/console/v1/experiments"
_names = itertools.count()

BUILTINS = ["view::event_count", "view::event_dau"]
REVENUE_REF = {"name": "revenue", "type": "sum"}
METRIC_IDS = [f"{m['name']}::{m['type']}" for m in METRICS] + BUILTINS


def ds(day: int) -> str:
    return dt.date.fromordinal(dt.date(1970, 1, 1).toordinal() + day).isoformat()


def ref(mid: str) -> dict[str, str]:
    name, _, mtype = mid.partition("::")
    return {"name": name, "type": mtype}


# --- fixtures -----------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock(aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    s3.create_bucket()
    c = Clock()
    monkeypatch.setattr(entities, "now_ms", c)
    yield c


@pytest.fixture
def fns(clock: Clock) -> dict[str, Caller]:
    out = {name: Caller(name) for name in ("metrics", "experiments", "pulse")}
    for body in METRICS:
        status, resp = out["metrics"]("POST", "/console/v1/metrics", body)
        assert status == 201, resp
    return out


def make_experiment(fns: dict[str, Caller], clock: Clock, *, start: bool = True, **fields: Any) -> str:
    body = {
        "name": f"pulse experiment {next(_names)}",
        "groups": GROUPS,
        "controlGroupID": "ctl",
        "primaryMetrics": [ref(m) for m in METRIC_IDS[:4]],
        "secondaryMetrics": [ref(m) for m in METRIC_IDS[4:]],
        **fields,
    }
    status, out = fns["experiments"]("POST", EXP, body)
    assert status == 201, out
    exp_id = out["data"]["id"]
    if start:
        clock.now = START
        status, out = fns["experiments"]("PUT", f"{EXP}/{exp_id}/start")
        assert status == 200 and out["data"]["startTime"] == START, out
    return exp_id


def send(events: list[dict[str, Any]], now: int = NOW) -> None:
    for i in range(0, len(events), 2000):
        ingest.ingest(json.dumps(events[i : i + 2000]), now_ms=now)


# --- the synthetic population -------------------------------------------------------------------------


def population(exp_id: str, seed: int = 1, n_units: int = 90) -> list[dict[str, Any]]:
    """Units exposed over the first 5 days, events from 9 days before the start to after NOW."""
    rng = np.random.default_rng(seed)
    out: list[dict[str, Any]] = []

    def add(user: str, name: str, ts: int, value: Any = None, **metadata: Any) -> None:
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

    ids = [g["id"] for g in GROUPS]
    for i in range(n_units):
        user, group = f"u{i}", ids[i % 3]
        e_day = S + int(rng.integers(0, 5))
        lo = max(START, e_day * DAY_MS)
        t_exp = lo + int(rng.integers(0, (e_day + 1) * DAY_MS - lo))
        expose(user, group, t_exp)
        lam = float(rng.gamma(2.0, 0.8)) * (1.3 if group == "t2" else 1.0)
        for d in range(S - 9, S + 10):
            if rng.random() < 0.45:
                continue
            for _ in range(int(rng.poisson(lam)) + 1):
                t = d * DAY_MS + int(rng.integers(0, DAY_MS))
                kind = rng.choice(["view", "cart", "purchase", "search"], p=[0.45, 0.2, 0.2, 0.15])
                if kind == "view":
                    item = rng.choice(["a", "b", "c", "d", "e", ""])
                    add(user, "view", t, **({"item": str(item)} if item else {}))
                elif kind == "cart":
                    amount = rng.choice(["float", "int", "text", "none"])
                    value = {"float": 12.5, "int": 7, "text": "3.25", "none": None}[str(amount)]
                    add(user, "cart", t, **({"amount": value} if value is not None else {}))
                elif kind == "purchase":
                    price: Any = round(float(rng.lognormal(3.0, 0.5)), 2)
                    if rng.random() < 0.1:
                        price = str(price)  # numeric text counts as a number
                    add(user, "purchase", t, price, plan=str(rng.choice(["free", "pro", "team"])))
                else:
                    add(user, "search", t, int(rng.choice([5, 10, 25])))
    # funnel steps at the same instant (each at or after the previous one)
    t = (S + 6) * DAY_MS + 2 * HOUR
    for name in ("view", "cart", "purchase"):
        add("u1", name, t, 20.0 if name == "purchase" else None)
    # an outlier the winsorization caps
    add("u2", "purchase", (S + 6) * DAY_MS + HOUR, 10_000)
    # a crossover (analysed in its first group), a repeated exposure
    expose("u3", "t1", (S + 5) * DAY_MS)
    expose("u4", "t1", (S + 5) * DAY_MS + 7)
    # not analysed: an unknown group, before the start, after the load, no userID
    expose("x-unknown", "zz", START + HOUR)
    add("x-unknown", "purchase", START + 2 * HOUR, 50)
    expose("x-early", "t1", START - 1000)
    add("x-early", "purchase", START + 2 * HOUR, 50)
    expose("x-future", "t1", NOW + 6 * HOUR)
    out.append(
        {
            "event": EXPOSURE,
            "user": {"stableID": "device-only"},
            "timestamp": START + HOUR,
            "metadata": {"experiment": exp_id, "group": "ctl"},
        }
    )
    return out


# --- checking stored statistics -------------------------------------------------------------------------


def _near(got: float, want: float, scale: float) -> bool:
    return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9 * scale + 1e-12)


def assert_records(exp_id: str, day: int, values: dict[str, dict[str, GroupValues]]) -> None:
    records = group_stats.read_day(kinds.EXPERIMENT, exp_id, ds(day))
    got = {(r.metricID, r.groupID): r for r in records}
    assert set(got) == {(m, g) for m, by_group in values.items() for g in by_group}, ds(day)
    for (mid, gid), r in got.items():
        v = values[mid][gid]
        if v.den is None:
            columns: tuple[np.ndarray, ...] = (v.x, v.p)
            nonzero, kind = int(np.count_nonzero(v.p)), "mean"
        else:
            assert v.pden is not None
            columns = (v.x, v.den, v.p, v.pden)
            nonzero, kind = int(np.count_nonzero((v.p != 0) | (v.pden != 0))), "ratio"
        n, means, com = moments(*columns)
        where = (ds(day), mid, gid)
        assert (r.kind, r.n, r.preNonzero) == (kind, n, nonzero), where
        for i, m in enumerate(means):
            assert _near(r.means[i], m, abs(m) + math.sqrt(com[i][i] / n)), (*where, "mean", i, r.means[i], m)
        for i in range(len(means)):
            for j in range(len(means)):
                scale = math.sqrt(com[i][i] * com[j][j])
                assert _near(r.comoments[i][j], com[i][j], scale), (
                    *where,
                    i,
                    j,
                    r.comoments[i][j],
                    com[i][j],
                )


def reference(
    events: list[dict[str, Any]],
    exp_id: str,
    *,
    now: int,
    rollup: int = -1,
    decision: int | None = None,
    enabled: dict[str, bool] | None = None,
    metric_ids: list[str] = METRIC_IDS,
) -> tuple[Exposures, dict[int, tuple[dict[str, dict[str, GroupValues]], dict[str, int]]]]:
    """The expected values of every result day, from the start day to the load's last day."""
    end = now if decision is None else min(now, decision)
    exp = exposures(
        events,
        exp_id,
        start=START,
        cutoff=now,
        groups=enabled or {g["id"]: True for g in GROUPS},
        decision=decision,
    )
    reg = Registry(METRICS)
    days = {}
    for day in range(S, day_of(end - 1) + 1):
        cutoff = min(end, (day + 1) * DAY_MS)
        days[day] = analyse_day(reg, metric_ids, events, exp, result_day=day, cutoff=cutoff, rollup=rollup)
    return exp, days


def assert_all_days(
    exp_id: str, days: dict[int, tuple[dict[str, dict[str, GroupValues]], dict[str, int]]]
) -> None:
    stored = group_stats.days(kinds.EXPERIMENT, exp_id)
    assert [d.ds for d in stored] == [ds(day) for day in days]
    for d, (day, (values, units)) in zip(stored, days.items(), strict=True):
        assert d.units == units
        assert_records(exp_id, day, values)


def health(fns: dict[str, Caller], exp_id: str) -> dict[str, dict[str, Any]]:
    status, out = fns["experiments"]("GET", f"{EXP}/{exp_id}")
    assert status == 200
    return {c["type"]: c for c in out["data"]["healthChecks"]}


# --- tests ----------------------------------------------------------------------------------------------


def test_cumulative_records_per_day_match_the_raw_events(fns: dict[str, Caller], clock: Clock) -> None:
    exp_id = make_experiment(fns, clock)
    events = population(exp_id)
    send(events)
    record = run.load_pulse(kinds.EXPERIMENT, exp_id, now=NOW)
    assert record["finishedState"] == "success"
    assert (record["startDs"], record["endDs"]) == (ds(S), ds(S + 9))

    exp, days = reference(events, exp_id, now=NOW)
    assert len(days) == 10 and sum(days[S + 9][1].values()) == 90
    # the data exercise what they should: the outlier is capped, values differ by day
    final = days[S + 9][0]
    raw_revenue = np.concatenate([final["revenue::sum"][g].x for g in ("ctl", "t1", "t2")])
    assert raw_revenue.max() < 10_000
    assert days[S + 3][0]["revenue::sum"]["ctl"].x.sum() < final["revenue::sum"]["ctl"].x.sum()
    assert_all_days(exp_id, days)

    # health: SRM on the latest day's units, the exposures not analysed, crossovers
    checks = health(fns, exp_id)
    units = days[S + 9][1]
    observed = [units[g["id"]] for g in GROUPS]
    assert math.isclose(
        checks["srm"]["metadata"]["p_value"], srm_p_value(observed, [g["size"] for g in GROUPS]), rel_tol=1e-9
    )
    balance = checks["exposure_balance"]["metadata"]
    assert balance["unknownGroupExposures"] == 1 == exp.counts["unknownGroup"]
    assert balance["validExposures"] == exp.counts["valid"] == 90 + 2
    assert balance["disabledGroupExposures"] == 0 and balance["exposuresAfterDecision"] == 0
    assert math.isclose(balance["crossoverPercent"], 100 * 1 / 90)
    assert checks["metrics"]["metadata"]["missingMetrics"] == []


def test_winsorization_caps_an_outlier(fns: dict[str, Caller], clock: Clock) -> None:
    """Revenue per unit 1, 2, 3 (control) and 1000, 0, 4 (t1): the pooled non-zero values
    [1, 2, 3, 4, 1000] have the linear 99.9th percentile 4 + 0.996·(1000 - 4) = 996.016."""
    exp_id = make_experiment(fns, clock)
    spend = {
        "a": ("ctl", 1),
        "b": ("ctl", 2),
        "c": ("ctl", 3),
        "d": ("t1", 1000),
        "e": ("t1", 0),
        "f": ("t1", 4),
    }
    events = []
    for i, (user, (group, value)) in enumerate(spend.items()):
        t = START + (i + 1) * HOUR
        events.append(
            {
                "event": EXPOSURE,
                "user": {"userID": user},
                "timestamp": t,
                "metadata": {"experiment": exp_id, "group": group},
            }
        )
        if value:
            events.append({"event": "purchase", "user": {"userID": user}, "timestamp": t + 1, "value": value})
    send(events, now=START + DAY_MS // 2)
    run.load_pulse(kinds.EXPERIMENT, exp_id, now=START + DAY_MS // 2)
    stored = {
        r.groupID: r
        for r in group_stats.read_day(kinds.EXPERIMENT, exp_id, ds(S))
        if r.metricID == "revenue::sum"
    }
    assert stored["ctl"].means[0] == pytest.approx(2.0, rel=1e-12)
    assert stored["t1"].means[0] == pytest.approx((996.016 + 0 + 4) / 3, rel=1e-12)
    values = np.array([996.016, 0.0, 4.0])
    assert stored["t1"].comoments[0][0] == pytest.approx(((values - values.mean()) ** 2).sum(), rel=1e-12)
    # buyers (event_user) is not winsorized: still 0/1
    buyers = {
        r.groupID: r
        for r in group_stats.read_day(kinds.EXPERIMENT, exp_id, ds(S))
        if r.metricID == "buyers::event_user"
    }
    assert buyers["t1"].means[0] == pytest.approx(2 / 3, rel=1e-12)


@pytest.mark.parametrize("rollup", [1, 7])
def test_rollup_windows(fns: dict[str, Caller], clock: Clock, rollup: int) -> None:
    exp_id = make_experiment(fns, clock, defaultRollupWindow=rollup)
    events = population(exp_id, seed=2)
    send(events)
    run.load_pulse(kinds.EXPERIMENT, exp_id, now=NOW)
    _, days = reference(events, exp_id, now=NOW, rollup=rollup)
    _, cumulative = reference(events, exp_id, now=NOW, metric_ids=["view::event_count"])
    last = days[S + 9][0]["view::event_count"]["ctl"].x
    assert last.sum() < cumulative[S + 9][0]["view::event_count"]["ctl"].x.sum()  # the window matters
    assert_all_days(exp_id, days)


def test_exposures_to_disabled_groups_and_after_the_decision(fns: dict[str, Caller], clock: Clock) -> None:
    exp_id = make_experiment(fns, clock)
    status, out = fns["experiments"]("POST", f"{EXP}/{exp_id}/disable_groups", {"group_names": ["Test two"]})
    assert status == 200, out
    decision = (S + 3) * DAY_MS + 12 * HOUR
    clock.now = decision
    status, out = fns["experiments"](
        "PUT", f"{EXP}/{exp_id}/make_decision", {"id": "t1", "decisionReason": "t1 wins"}
    )
    assert status == 200 and out["data"]["decisionTime"] == decision, out
    events = population(exp_id, seed=3)
    events += [
        {
            "event": EXPOSURE,
            "user": {"userID": f"late{i}"},
            "timestamp": decision + i * DAY_MS // 2,
            "metadata": {"experiment": exp_id, "group": "ctl"},
        }
        for i in range(4)
    ]
    send(events)
    clock.now = NOW
    record = run.load_pulse(kinds.EXPERIMENT, exp_id, now=NOW)
    assert record["endDs"] == ds(S + 3)  # results stop at the decision

    enabled = {"ctl": True, "t1": True, "t2": False}
    exp, days = reference(events, exp_id, now=NOW, decision=decision, enabled=enabled)
    assert set(days) == set(range(S, S + 4))
    assert all(set(units) <= {"ctl", "t1"} for _, units in days.values())
    assert_all_days(exp_id, days)
    balance = health(fns, exp_id)["exposure_balance"]["metadata"]
    assert exp.counts["afterDecision"] > 4 and exp.counts["disabledGroup"] > 0
    assert balance["exposuresAfterDecision"] == exp.counts["afterDecision"]
    assert balance["disabledGroupExposures"] == exp.counts["disabledGroup"]
    assert balance["validExposures"] == exp.counts["valid"]
    srm = health(fns, exp_id)["srm"]["metadata"]
    assert [g["groupID"] for g in srm["groups"]] == ["ctl", "t1"]
    observed = [days[S + 3][1].get(g, 0) for g in ("ctl", "t1")]
    assert math.isclose(srm["p_value"], srm_p_value(observed, [34, 33]), rel_tol=1e-9)


class AggregateSpy:
    """Records the day of every unit aggregate the pipeline computes (instead of reusing)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.days: list[str] = []
        real = run.aggregate_day

        def spy(plan: Any, table: Any, cutoff: int, *args: Any) -> Any:
            self.days.append(ds(day_of(cutoff - 1)))
            return real(plan, table, cutoff, *args)

        monkeypatch.setattr(run, "aggregate_day", spy)

    def take(self) -> list[str]:
        out, self.days = self.days, []
        return out


def test_incremental_refresh_reuses_day_aggregates(
    fns: dict[str, Caller], clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp_id = make_experiment(fns, clock)
    events = population(exp_id, seed=4)
    send(events)
    spy = AggregateSpy(monkeypatch)
    run.load_pulse(kinds.EXPERIMENT, exp_id, now=NOW, refresh="incremental")
    assert spy.take() == [ds(d) for d in range(S - 7, S + 10)]  # nothing stored yet: every day

    later = NOW + HOUR
    run.load_pulse(kinds.EXPERIMENT, exp_id, now=later, refresh="incremental")
    assert spy.take() == [ds(S + 9)]  # only today's partial day moved on
    run.load_pulse(kinds.EXPERIMENT, exp_id, now=later, refresh="incremental")
    assert spy.take() == []  # nothing changed: nothing recomputed
    assert_all_days(exp_id, reference(events, exp_id, now=later)[1])

    # a late event for an old, compacted day: that day is recomputed (its Parquet file and the
    # new raw object), and counted once
    _compact_due(clock, exp_id, later)
    late = {"event": "purchase", "user": {"userID": "u5"}, "timestamp": (S + 6) * DAY_MS + 5, "value": 33}
    send([late], now=later)
    events.append(late)
    run.load_pulse(kinds.EXPERIMENT, exp_id, now=later, refresh="incremental")
    assert spy.take() == [ds(S + 6)]
    assert_all_days(exp_id, reference(events, exp_id, now=later)[1])

    run.load_pulse(kinds.EXPERIMENT, exp_id, now=later, refresh="full")
    assert spy.take() == [ds(d) for d in range(S - 7, S + 10)]
    assert_all_days(exp_id, reference(events, exp_id, now=later)[1])


def _compacted(day: int) -> list[str]:
    return sorted(s3.keys(daydata.compacted_prefix(ds(day))))


def _rows(events: list[dict[str, Any]], day: int) -> list[tuple[str, int, str | None]]:
    return sorted(
        (e["event"], e["timestamp"], e["user"].get("userID")) for e in events if day_of(e["timestamp"]) == day
    )


def _compact_due(clock: Clock, exp_id: str, now: int) -> list[str]:
    """What the hourly schedule does after its loads: the finished days they read, compacted."""
    clock.now = now
    days = pulse_loads.compaction_due([(kinds.EXPERIMENT, exp_id)], now)
    written = pulse_loads.compact({"days": days})["compacted"]
    assert written == days
    return written


def test_compaction_is_idempotent_and_backfills_are_read_once(
    fns: dict[str, Caller], clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp_id = make_experiment(fns, clock)
    events = population(exp_id, seed=5)
    send(events)
    run.load_pulse(kinds.EXPERIMENT, exp_id, now=NOW)
    assert list(s3.keys(s3.COMPACTED_PREFIX)) == []  # a load reads raw objects; it never compacts
    # every finished day from the pre-period on; today is not finished: not compacted
    assert _compact_due(clock, exp_id, NOW) == [ds(d) for d in range(S - 7, S + 9)]
    assert _compacted(S + 9) == []
    day = S + 2
    keys = _compacted(day)
    assert len(keys) == 2 and keys[0].endswith("/_manifest.json") and keys[1].endswith(".parquet")
    manifest = json.loads(s3.get(keys[0]))
    raw = sorted(k for k in s3.keys(s3.day_prefix(ds(day))))
    assert manifest["sources"] == raw and manifest["parquet"] == keys[1]
    table = pq.read_table(io.BytesIO(s3.get(keys[1])))
    got = sorted(
        zip(
            table["event"].to_pylist(),
            table["timestamp"].to_pylist(),
            table["userID"].to_pylist(),
            strict=True,
        )
    )
    assert got == _rows(events, day) and manifest["rows"] == len(got)

    # nothing new: nothing is due, no compacted object is written again, the same Parquet file stays
    writes: list[str] = []
    real_put = s3.put_object

    def spy(key: str, body: bytes, content_type: str = "application/octet-stream") -> None:
        writes.append(key)
        real_put(key, body, content_type)

    monkeypatch.setattr(s3, "put_object", spy)
    assert pulse_loads.compaction_due([(kinds.EXPERIMENT, exp_id)], NOW + HOUR) == []
    assert pulse_loads.compact({"days": [ds(day)]}) == {"compacted": []}
    assert not [k for k in writes if k.startswith(s3.COMPACTED_PREFIX)]
    assert _compacted(day) == keys
    # loads over compacted days give the records the raw events give
    run.load_pulse(kinds.EXPERIMENT, exp_id, now=NOW + HOUR, refresh="full")
    assert_all_days(exp_id, reference(events, exp_id, now=NOW + HOUR)[1])

    # a backfill: read beside the Parquet file without double counting, then folded in
    late = {
        "event": "view",
        "user": {"userID": "u7"},
        "timestamp": day * DAY_MS + 17,
        "metadata": {"item": "q"},
    }
    send([late], now=NOW + HOUR)
    events.append(late)
    got = sorted(daydata.read_rows(ds(day), ["event", "timestamp", "userID"]))
    assert got == _rows(events, day)
    run.load_pulse(kinds.EXPERIMENT, exp_id, now=NOW + HOUR)
    assert_all_days(exp_id, reference(events, exp_id, now=NOW + HOUR)[1])
    assert _compact_due(clock, exp_id, NOW + HOUR) == [ds(day)]
    new_keys = _compacted(day)
    assert len(new_keys) == 2 and new_keys[1] != keys[1]  # a new Parquet file, the old one removed
    manifest = json.loads(s3.get(new_keys[0]))
    assert manifest["sources"] == sorted(s3.keys(s3.day_prefix(ds(day)))) and manifest["rows"] == len(got)
    assert len(daydata.read_rows(ds(day), ["event"])) == len(got)
    run.load_pulse(kinds.EXPERIMENT, exp_id, now=NOW + HOUR, refresh="full")
    assert_all_days(exp_id, reference(events, exp_id, now=NOW + HOUR)[1])


def test_on_athena_nothing_is_compacted(
    fns: dict[str, Caller], clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp_id = make_experiment(fns, clock)
    send(population(exp_id, seed=10))
    target = [(kinds.EXPERIMENT, exp_id)]
    assert pulse_loads.compaction_due(target, NOW)  # finished days with raw objects
    monkeypatch.setenv(athena.ENGINE_ENV, "athena")  # Athena reads the raw partitions, never Parquet
    assert pulse_loads.compaction_due(target, NOW) == []


def test_a_load_that_listed_a_parquet_file_a_compaction_replaced_reads_the_new_one(
    fns: dict[str, Caller], clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp_id = make_experiment(fns, clock)
    events = population(exp_id, seed=9)
    send(events)
    _compact_due(clock, exp_id, NOW)
    day = S + 3
    late = {"event": "purchase", "user": {"userID": "u3"}, "timestamp": day * DAY_MS + 99, "value": 7}
    send([late], now=NOW + HOUR)
    events.append(late)
    # the load lists the day (old manifest), then a compaction replaces the day's Parquet file
    # and deletes the old one before the load downloads it
    real_listing = daydata.listing
    replaced: list[str] = []

    def listing_then_compaction(ds_: str, keys: list[str] | None = None) -> daydata.Listing:
        listed = real_listing(ds_, keys)
        if ds_ == ds(day) and listed.manifest is not None and not listed.compacted and not replaced:
            replaced.append(listed.manifest["parquet"])
            pulse_loads.compact({"days": [ds_]})
        return listed

    monkeypatch.setattr(daydata, "listing", listing_then_compaction)
    record = run.load_pulse(kinds.EXPERIMENT, exp_id, now=NOW + HOUR, refresh="full")
    assert record["finishedState"] == "success"
    assert replaced and replaced[0] not in _compacted(day)  # the file it listed was gone
    assert_all_days(exp_id, reference(events, exp_id, now=NOW + HOUR)[1])


def test_refresh_metric_writes_only_those_metrics(fns: dict[str, Caller], clock: Clock) -> None:
    exp_id = make_experiment(fns, clock)
    events = population(exp_id, seed=6)
    send(events)
    clock.now = NOW
    status, out = fns["pulse"](
        "POST", f"{EXP}/{exp_id}/load_pulse", {"refresh": "metric", "metricIDs": ["revenue::sum"]}
    )
    assert status == 200 and out["data"]["reloadType"] == "metric", out
    records = group_stats.read_day(kinds.EXPERIMENT, exp_id, ds(S + 9))
    assert {r.metricID for r in records} == {"revenue::sum"}

    status, out = fns["pulse"]("POST", f"{EXP}/{exp_id}/load_pulse", {"refresh": "full"})
    assert status == 200, out
    _, before = reference(events, exp_id, now=NOW)
    assert_all_days(exp_id, before)
    # new events; a metric reload changes that metric's records only
    extra = [
        {"event": "purchase", "user": {"userID": f"u{i}"}, "timestamp": NOW - HOUR + i, "value": 5}
        for i in range(30)
    ]
    send(extra)
    events += extra
    status, out = fns["pulse"](
        "POST", f"{EXP}/{exp_id}/load_pulse", {"refresh": "metric", "metricIDs": ["buyers::event_user"]}
    )
    assert status == 200, out
    _, after = reference(events, exp_id, now=NOW)
    mixed = {
        day: ({m: (after if m == "buyers::event_user" else before)[day][0][m] for m in METRIC_IDS}, units)
        for day, (_, units) in after.items()
    }
    assert_all_days(exp_id, mixed)
    # the metrics that were not reloaded are not reported missing
    assert health(fns, exp_id)["metrics"]["metadata"]["missingMetrics"] == []


def test_load_pulse_answers_and_history(fns: dict[str, Caller], clock: Clock) -> None:
    pulse = fns["pulse"]
    exp_id = make_experiment(fns, clock, start=False, primaryMetrics=[REVENUE_REF], secondaryMetrics=[])
    status, out = pulse("POST", f"{EXP}/{exp_id}/load_pulse", {})
    assert status == 400 and "not started" in out["message"], out
    status, out = pulse("POST", f"{EXP}/missing/load_pulse", {})
    assert status == 404, out
    status, out = pulse("GET", f"{EXP}/missing/pulse_load_history")
    assert status == 404, out
    clock.now = START
    status, _ = fns["experiments"]("PUT", f"{EXP}/{exp_id}/start")
    assert status == 200
    status, out = pulse("POST", f"{EXP}/{exp_id}/load_pulse", {"refresh": "metric"})
    assert status == 400 and any(e["field"] == "metricIDs" for e in out["errors"]), out
    status, out = pulse(
        "POST", f"{EXP}/{exp_id}/load_pulse", {"refresh": "metric", "metricIDs": ["nope::sum"]}
    )
    assert status == 400 and "nope::sum" in out["message"], out
    status, out = pulse("POST", f"{EXP}/{exp_id}/load_pulse", {"refresh": "sometimes"})
    assert status == 400 and "refresh" in out["message"], out
    status, out = pulse("GET", f"{EXP}/{exp_id}/pulse_load_history")
    assert status == 200 and out["data"] == [], out  # refused loads leave no record

    send(population(exp_id, seed=7, n_units=12))
    made = []
    for i, body in enumerate([None, {"refresh": "incremental"}, {"refresh": "full", "turboMode": True}]):
        clock.now = NOW + i * HOUR
        status, out = pulse("POST", f"{EXP}/{exp_id}/load_pulse", body)
        assert status == 200 and out["message"] == "Pulse loaded.", out
        rec = out["data"]
        assert rec["createdTime"] == clock.now and rec["finishedState"] == "success"
        assert (rec["startDs"], rec["endDs"]) == (ds(S), ds(S + 9))
        made.append(rec)
    assert [r["reloadType"] for r in made] == ["full", "incremental", "full"]
    assert [r["turboMode"] for r in made] == [False, False, True]
    status, out = pulse("GET", f"{EXP}/{exp_id}/pulse_load_history", query="limit=2")
    assert status == 200 and out["data"] == made[::-1][:2]
    assert out["pagination"]["totalItems"] == 3 and out["pagination"]["nextPage"] is not None
    status, out = pulse(
        "GET", out["pagination"]["nextPage"].split("?")[0], query=out["pagination"]["nextPage"].split("?")[1]
    )
    assert status == 200 and out["data"] == [made[0]]


def test_the_schedule_honours_reload_hour_and_days(fns: dict[str, Caller], clock: Clock) -> None:
    every = make_experiment(fns, clock)
    sunday_five = make_experiment(fns, clock, scheduledReloadHour=5, scheduledReloadDays=[0])
    five = make_experiment(fns, clock, scheduledReloadHour=5)
    weekdays = make_experiment(fns, clock, scheduledReloadDays=[1, 2, 3, 4, 5])
    make_experiment(fns, clock, start=False)  # not started: never due
    decided = make_experiment(fns, clock)
    status, _ = fns["experiments"]("PUT", f"{EXP}/{decided}/abandon", {"decisionReason": "x"})
    assert status == 200

    def due(when: dt.datetime) -> set[str]:
        return {
            entity_id
            for kind, entity_id in pulse_loads.due(int(when.timestamp() * 1000))
            if kind == kinds.EXPERIMENT
        }

    sunday = dt.datetime(2026, 3, 15, tzinfo=dt.UTC)
    assert sunday.weekday() == 6
    assert due(sunday.replace(hour=5, minute=10)) == {every, sunday_five, five}
    assert due(sunday.replace(hour=6)) == {every}
    monday = sunday + dt.timedelta(days=1)
    assert due(monday.replace(hour=5)) == {every, five, weekdays}
    assert due(monday.replace(hour=23)) == {every, weekdays}
    saturday = sunday - dt.timedelta(days=1)
    assert due(saturday.replace(hour=5)) == {every, five}


def test_the_scheduled_event_loads_due_experiments_incrementally(
    fns: dict[str, Caller], clock: Clock
) -> None:
    exp_id = make_experiment(fns, clock, scheduledReloadHour=12, scheduledReloadDays=[4])  # Thursdays
    events = population(exp_id, seed=8)
    send(events)
    clock.now = NOW  # Thursday 2026-03-19 12:00
    handler = load_function("pulse").lambda_handler
    out = handler({"detail-type": "Scheduled Event", "time": "2026-03-19T12:00:00Z"}, LAMBDA_CONTEXT)
    # the loads first, then the finished days they read (the pre-period to yesterday) compacted
    assert out == {"loaded": [exp_id], "failed": [], "compacting": [ds(d) for d in range(S - 7, S + 9)]}
    assert all(len(_compacted(d)) == 2 for d in range(S - 7, S + 9)) and _compacted(S + 9) == []
    history = pulse_loads.history(exp_id, 1, 10).items
    assert [(h["creatorName"], h["reloadType"], h["finishedState"]) for h in history] == [
        ("Scheduled reload", "incremental", "success")
    ]
    assert_all_days(exp_id, reference(events, exp_id, now=NOW)[1])
    out = handler({"detail-type": "Scheduled Event", "time": "2026-03-19T13:00:00Z"}, LAMBDA_CONTEXT)
    assert out == {"loaded": [], "failed": [], "compacting": []}


def test_a_load_as_of_a_date_stops_at_its_end(fns: dict[str, Caller], clock: Clock) -> None:
    exp_id = make_experiment(fns, clock)
    events = population(exp_id, seed=9)
    send(events)
    record = run.load_pulse(kinds.EXPERIMENT, exp_id, now=NOW, as_of=ds(S + 4))
    assert record["endDs"] == ds(S + 4)
    assert_all_days(exp_id, reference(events, exp_id, now=(S + 5) * DAY_MS)[1])


def test_a_storage_failure_is_a_503_recorded_as_a_failed_load(
    fns: dict[str, Caller], clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.exceptions import ClientError

    exp_id = make_experiment(fns, clock)
    send(population(exp_id, seed=10, n_units=9))
    clock.now = NOW

    def broken(*args: Any, **kwargs: Any) -> None:
        raise ClientError({"Error": {"Code": "InternalError", "Message": "S3 is down"}}, "PutObject")

    monkeypatch.setattr(s3, "put_object", broken)
    status, out = fns["pulse"]("POST", f"{EXP}/{exp_id}/load_pulse", {})
    assert status == 503, out
    status, out = fns["pulse"]("GET", f"{EXP}/{exp_id}/pulse_load_history")
    assert status == 200 and len(out["data"]) == 1
    failed = out["data"][0]
    assert failed["finishedState"] == "failure"
    assert "S3 is down" not in failed["message"] and "PutObject" not in failed["message"]  # logged, not shown
    assert "retry" in failed["message"].lower()
    assert failed["finishedTime"] is not None
    assert group_stats.days(kinds.EXPERIMENT, exp_id) == []
