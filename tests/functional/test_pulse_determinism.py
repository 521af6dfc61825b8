"""A reload of the same day aggregates writes the same statistics to the last bit, at a size where
DuckDB's threads split the work, and those statistics are the ones an independent computation
(numpy) gives.

Floating-point sums depend on the order of their terms; DuckDB combines its threads' partial
aggregates in any order. analyse.py sorts the capped unit values once and aggregates them with
one thread, which reads them in that order. 300,000 units with values of many significant digits
span several of DuckDB's row groups (122,880 rows), so with 4 threads an order that varied from
run to run would show in the low bits of the means and co-moments.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest

from expconsole import kinds
from expconsole.services.pulse.analyse import WINSOR_QUANTILE, analyse
from expconsole.services.pulse.plan import DAY_MS, PRE_DAYS, Atom, EntityPlan, MetricPlan

UNITS = 300_000
DAYS = [f"2026-03-{d:02d}" for d in range(1, PRE_DAYS + 3)]  # 7 pre-period days, 2 result days
FIRST = PRE_DAYS
START = 1_772_323_200_000 + FIRST * DAY_MS  # 2026-03-01 + 7 days, UTC
GROUPS = [{"id": "ctl", "name": "Control", "size": 50}, {"id": "t1", "name": "Test", "size": 50}]


def _plan() -> EntityPlan:
    revenue = MetricPlan("revenue::sum", "revenue", "sum", "increase", "mean", atoms=[0])
    return EntityPlan(
        kind=kinds.EXPERIMENT,
        id="det",
        name="det",
        id_type="userID",
        start_ms=START,
        end_ms=None,
        decision_ms=None,
        exposure_event="console::experiment_exposure",
        groups=GROUPS,
        control_id="ctl",
        rollup=-1,
        metrics=[revenue],
        atoms=[Atom("purchase", measure="value")],
        funnels=[],
    )


UNITS_PART = """
COPY (
    SELECT printf('u%07d', i) AS unit,
        CASE WHEN {exposed} THEN {start} + i ELSE NULL END AS exp_ts,
        CASE WHEN {exposed} THEN (CASE WHEN i % 2 = 0 THEN 'ctl' ELSE 't1' END) END AS exp_group,
        CASE WHEN {exposed} THEN (CASE WHEN i % 2 = 0 THEN 'ctl' ELSE 't1' END) END AS exp_groups,
        CAST(1 + i % 3 AS DOUBLE) AS n0, CAST(1 + i % 3 AS DOUBLE) AS np0,
        {value} AS s0, {value} AS sp0
    FROM range({units}) AS r(i)
) TO '{path}' (FORMAT parquet)
"""
EMPTY_PARTS = {
    "distinct": "SELECT 0 AS atom, 'u' AS unit, 'v' AS value, 0::BIGINT AS ts WHERE false",
    "funnel": "SELECT 0 AS funnel, 0 AS step, 'u' AS unit, 0::BIGINT AS ts WHERE false",
}


def _value(day: int) -> str:
    """A value of many significant digits, heavy-tailed (some units above the winsorization cap)."""
    return f"(hash(i * 31 + {day}) % 1000003) / 7.0 * (CASE WHEN i % 997 = 0 THEN 1000.0 ELSE 1.0 END)"


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Path]]:
    root = tmp_path_factory.mktemp("parts")
    con = duckdb.connect()
    out = []
    for d, _ in enumerate(DAYS):
        day = root / str(d)
        day.mkdir()
        con.execute(
            UNITS_PART.format(
                exposed="true" if d == FIRST else "false",
                start=START,
                value=_value(d),
                units=UNITS,
                path=day / "units.parquet",
            )
        )
        for name, select in EMPTY_PARTS.items():
            con.execute(f"COPY ({select}) TO '{day / f'{name}.parquet'}' (FORMAT parquet)")
        out.append({"units": day / "units.parquet", **{n: day / f"{n}.parquet" for n in EMPTY_PARTS}})
    return out


def _records(parts: list[dict[str, Path]]) -> list[tuple[str, str, int, list[float], list[list[float]], int]]:
    con = duckdb.connect(config={"threads": 4, "preserve_insertion_order": False})
    try:
        result = analyse(con, _plan(), DAYS, parts, [{}] * len(DAYS), FIRST)
    finally:
        con.close()
    return [
        (day.ds, r.groupID, r.n, r.means, r.comoments, r.preNonzero)
        for day in result.days
        for r in day.records
    ]


def test_a_reload_writes_the_same_statistics_to_the_last_bit(parts: list[dict[str, Path]]) -> None:
    first = _records(parts)
    assert len(first) == 4  # 2 result days x 2 groups
    for _ in range(2):
        assert _records(parts) == first


def test_the_statistics_are_numpy_s(parts: list[dict[str, Path]]) -> None:
    """Per result day and group: n, the means and centred co-moments of the capped cumulative
    revenue (x) and the pre-period revenue (p), capped at the 99.9th percentile of the day's
    non-zero values over every group."""
    con = duckdb.connect()
    daily = [
        np.array(
            con.execute(f"SELECT s0 FROM read_parquet('{p['units']}') ORDER BY unit").fetchnumpy()["s0"],
            float,
        )
        for p in parts
    ]
    unit = np.arange(UNITS)
    group = np.where(unit % 2 == 0, "ctl", "t1")
    pre = sum(daily[FIRST - PRE_DAYS : FIRST])
    got = {(ds, g): (n, means, co) for ds, g, n, means, co, _ in _records(parts)}
    for r in range(FIRST, len(DAYS)):
        post = sum(daily[FIRST : r + 1])
        capped = []
        for values in (post, pre):
            nonzero = values[values != 0]
            capped.append(np.minimum(values, np.percentile(nonzero, WINSOR_QUANTILE * 100)))
        for g in ("ctl", "t1"):
            x, p = (c[group == g] for c in capped)
            n, means, co = got[(DAYS[r], g)]
            assert n == x.size
            assert means == pytest.approx([x.mean(), p.mean()], rel=1e-9)
            expected = np.cov(np.vstack([x, p]), bias=True) * x.size
            assert np.allclose(co, expected, rtol=1e-9, atol=0)
