"""The pulse queries are written once: they parse as Trino (Athena's engine) and use only functions
Trino has, and transpiled to Trino and back to DuckDB (sqlglot) they give the same numbers.

The round trip runs the whole pipeline with every shared query rewritten DuckDB -> Trino -> DuckDB
before DuckDB runs it, on the functional tests' experiment (every metric type, criteria, distinct
counts, both funnel modes, CUPED, winsorization), and checks the stored records against
tests/pulse_reference.py, the independent computation the other pulse tests use.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlglot
from sqlglot import exp

from expconsole import kinds
from expconsole.services.pulse import engine, run
from expconsole.services.pulse.aggregate import OUTPUTS, STEPS, day_queries, with_form
from expconsole.services.pulse.plan import Atom, EntityPlan, Funnel, holdout_plan
from tests.functional import test_pulse as base
from tests.functional.test_pulse import NOW, assert_all_days, make_experiment, population, reference, send

clock, fns = base.clock, base.fns  # the pulse tests' fixtures: a settable clock, the functions

# Trino functions the queries may call (https://trino.io/docs/current/functions/list.html).
TRINO_FUNCTIONS = {
    "ARRAY_AGG",
    "ARRAY_DISTINCT",
    "ARRAY_JOIN",
    "ARRAY_SORT",
    "CAST",
    "COALESCE",
    "COUNT",
    "IF",  # a conditional expression in Trino
    "JSON_EXTRACT",
    "JSON_EXTRACT_SCALAR",
    "LOWER",
    "MIN",
    "MIN_BY",
    "NULLIF",
    "STRPOS",
    "SUM",
    "TRY_CAST",
}
FIELDS = (("value", ""), ("metadata", "plan"), ("user", "country"), ("user_custom", "tier"))
CONDITIONS = ["in", "not_in", "contains", "not_contains", "=", ">", "<", ">=", "<=", "is_null", "non_null"]


def to_trino(sql: str) -> str:
    return sqlglot.transpile(sql, read="duckdb", write="trino")[0]


def round_trip(sql: str) -> str:
    return sqlglot.transpile(to_trino(sql), read="trino", write="duckdb")[0]


def _plans() -> list[EntityPlan]:
    """Plans that between them use every field, condition, measure, id type and exposure kind."""
    criteria = [
        (ctype, column, condition, ("pro", "3"))
        for ctype, column in FIELDS
        for condition in [*CONDITIONS, "is_true", "is_false"]
    ]
    atoms = [
        Atom("purchase", tuple(criteria[:13]), "value"),
        Atom("purchase", tuple(criteria[13:26]), "metadata", "amount"),
        Atom("view", tuple(criteria[26:]), "distinct", "item"),
        Atom("view", (), "distinct"),
        Atom("cart"),
    ]
    experiment = EntityPlan(
        kind=kinds.EXPERIMENT,
        id="exp's id",
        name="e",
        id_type="companyID",
        start_ms=1,
        end_ms=None,
        decision_ms=5,
        exposure_event="console::experiment_exposure",
        groups=[{"id": "a"}, {"id": "b", "disabled": True}],
        control_id="a",
        rollup=-1,
        metrics=[],
        atoms=atoms,
        funnels=[Funnel([4, 0, 1], "users"), Funnel([3, 3], "events")],
    )
    holdout = holdout_plan({"id": "h1", "name": "h", "passPercentage": 10})
    return [experiment, holdout]


@pytest.mark.parametrize("plan", _plans(), ids=["experiment", "holdout"])
def test_every_query_parses_as_trino_and_calls_only_trino_functions(plan: EntityPlan) -> None:
    queries = day_queries(plan, 100, 200)
    for output in OUTPUTS:
        trino = to_trino(with_form(queries, output))
        tree = sqlglot.parse_one(trino, read="trino", error_level=sqlglot.ErrorLevel.RAISE)
        names = {
            (f.name if isinstance(f, exp.Anonymous) else f.sql(dialect="trino").split("(")[0]).upper()
            for f in tree.find_all(exp.Func)
        }
        called = {n for n in names if n.replace("_", "").isalpha()}
        assert called <= TRINO_FUNCTIONS, (output, called - TRINO_FUNCTIONS)
        assert "day_source" in trino and "read_json" not in trino.lower()


def test_round_tripped_queries_give_the_same_records(
    fns: Any, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp_id = make_experiment(fns, clock)
    events = population(exp_id, seed=11)
    send(events)
    rewritten: list[str] = []

    def transform(sql: str) -> str:
        rewritten.append(sql)
        return round_trip(sql)

    monkeypatch.setattr(engine, "TRANSFORM", transform)
    run.load_pulse(kinds.EXPERIMENT, exp_id, now=NOW)
    days = 17  # 7 pre-period days and 10 result days
    assert len(rewritten) == days * (len(STEPS) + len(OUTPUTS))
    assert_all_days(exp_id, reference(events, exp_id, now=NOW)[1])
