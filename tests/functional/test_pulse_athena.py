"""The Athena engine's orchestration against moto's Athena: start, poll with backoff, typed results,
cancel on timeout, clear errors, and the day aggregate's statements.

moto does not execute queries: results are injected through moto's API
(`/moto-api/static/athena/query-results`), and how many polls a query takes to succeed through
its state manager (`/moto-api/state-manager/set-transition`). moto never reports a FAILED query,
so that one case uses botocore's Stubber with the response shape Athena documents.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests
import sqlglot
from botocore.stub import Stubber

from expconsole import aws as clients
from expconsole import config
from expconsole.services.pulse import athena, engine
from expconsole.services.pulse.aggregate import HEALTH_KEYS, PARTS
from expconsole.services.pulse.plan import holdout_plan
from expconsole.store import s3

MOTO_API = "http://motoapi.amazonaws.com/moto-api"
WORKGROUP, DATABASE = "stack-pulse", "stack_events"


@pytest.fixture
def athena_env(aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(athena.ENGINE_ENV, "athena")
    monkeypatch.setenv(athena.WORKGROUP_ENV, WORKGROUP)
    monkeypatch.setenv(athena.DATABASE_ENV, DATABASE)
    s3.create_bucket()
    clients.client("athena").create_work_group(Name=WORKGROUP)
    yield
    requests.post(f"{MOTO_API}/state-manager/unset-transition", json={"model_name": "athena::execution"})


def inject(*results: tuple[list[tuple[str, str]], list[list[str | None]]]) -> None:
    """Queue query results in moto: (columns as (name, type), rows of texts) per query, in start order."""
    body = {
        "results": [
            {
                "rows": [
                    {"Data": [{"VarCharValue": v} if v is not None else {} for v in row]}
                    for row in [[name for name, _ in columns], *rows]
                ],
                "column_info": [
                    {"Name": name, "Label": name, "Type": kind, "Nullable": "NULLABLE"}
                    for name, kind in columns
                ],
            }
            for columns, rows in results
        ]
    }
    assert requests.post(f"{MOTO_API}/static/athena/query-results", json=body).status_code == 201


def polls_to_succeed(times: int) -> None:
    transition = {"progression": "manual", "times": times}
    response = requests.post(
        f"{MOTO_API}/state-manager/set-transition",
        json={"model_name": "athena::execution", "transition": transition},
    )
    assert response.status_code == 201


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def test_a_query_is_polled_with_backoff_and_its_rows_typed(athena_env: None) -> None:
    inject(
        (
            [("status", "varchar"), ("n", "bigint"), ("share", "double"), ("ok", "boolean")],
            [["valid", "12", "0.5", "true"], ["late", None, "1e3", "false"]],
        )
    )
    polls_to_succeed(4)  # QUEUED -> RUNNING -> SUCCEEDED, each transition after 4 polls
    t = FakeTime()
    result = athena.run_query(
        "SELECT 1", workgroup=WORKGROUP, database=DATABASE, sleep=t.sleep, clock=t.clock, max_wait_s=1.0
    )
    assert result.columns == ["status", "n", "share", "ok"]
    assert result.rows == [("valid", 12, 0.5, True), ("late", None, 1000.0, False)]
    assert t.sleeps[:3] == [0.25, 0.5, 1.0] and set(t.sleeps[3:]) == {1.0} and len(t.sleeps) >= 4
    execution = clients.client("athena").get_query_execution(QueryExecutionId=result.query_id)[
        "QueryExecution"
    ]
    assert execution["Query"] == "SELECT 1" and execution["WorkGroup"] == WORKGROUP
    assert execution["QueryExecutionContext"]["Database"] == DATABASE


def test_a_query_past_its_timeout_is_cancelled(athena_env: None) -> None:
    polls_to_succeed(10_000)
    t = FakeTime()
    with pytest.raises(athena.AthenaError, match=r"did not finish within 30 s .* it was cancelled"):
        athena.run_query(
            "SELECT 1", workgroup=WORKGROUP, database=DATABASE, timeout_s=30, sleep=t.sleep, clock=t.clock
        )
    assert t.now <= 30
    client = clients.client("athena")
    (query_id,) = client.list_query_executions(WorkGroup=WORKGROUP)["QueryExecutionIds"]
    state = client.get_query_execution(QueryExecutionId=query_id)["QueryExecution"]["Status"]["State"]
    assert state == "CANCELLED"


def test_a_failed_query_raises_athenas_reason(athena_env: None) -> None:
    client = clients.client("athena")
    with Stubber(client) as stub:
        stub.add_response("start_query_execution", {"QueryExecutionId": "q-1"})
        stub.add_response(
            "get_query_execution",
            {
                "QueryExecution": {
                    "QueryExecutionId": "q-1",
                    "Status": {
                        "State": "FAILED",
                        "StateChangeReason": "Query exhausted resources",
                        "AthenaError": {
                            "ErrorCategory": 2,
                            "ErrorMessage": "Bytes scanned limit was exceeded",
                        },
                    },
                }
            },
        )
        with pytest.raises(athena.AthenaError, match="q-1 failed: Bytes scanned limit was exceeded"):
            athena.run_query("SELECT 1", workgroup=WORKGROUP, database=DATABASE)


def test_a_query_athena_refuses_says_so(athena_env: None) -> None:
    client = clients.client("athena")
    with Stubber(client) as stub:
        stub.add_client_error(
            "start_query_execution", "InvalidRequestException", "line 1:8: mismatched input"
        )
        with pytest.raises(athena.AthenaError, match="did not start the query: line 1:8: mismatched input"):
            athena.run_query("SELEC 1", workgroup=WORKGROUP, database=DATABASE)


def test_the_day_aggregate_runs_the_shared_queries_on_the_glue_table(athena_env: None) -> None:
    plan = holdout_plan({"id": "h1", "name": "h", "passPercentage": 10, "monitoringMetrics": []})
    inject(([("status", "varchar"), ("n", "bigint")], [["valid", "7"], ["unknownGroup", "2"]]))
    with engine.Spill() as spill:
        con = engine.connect(spill.duckdb)
        agg, _ = athena.aggregate_day(con, spill, plan, "2026-03-10", spill.path("out"), 100, 200)
        # moto runs no UNLOAD: the parts are the engine's typed empty parts
        assert {
            name: con.execute(f"SELECT count(*) FROM '{agg.files[name]}'").fetchone() for name in PARTS
        } == {name: (0,) for name in PARTS}
        con.close()
    assert agg.health == {**dict.fromkeys(HEALTH_KEYS, 0), "valid": 7, "unknownGroup": 2}
    client = clients.client("athena")
    ids = client.list_query_executions(WorkGroup=WORKGROUP)["QueryExecutionIds"]
    queries: list[Any] = [
        client.get_query_execution(QueryExecutionId=i)["QueryExecution"]["Query"] for i in ids
    ]
    assert len(queries) == 1 + len(PARTS)
    unloads = [q for q in queries if q.startswith("UNLOAD")]
    assert len(unloads) == len(PARTS)
    for query in queries:
        body = query.removeprefix("UNLOAD (").split(") TO 's3://")[0] if query.startswith("UNLOAD") else query
        sqlglot.parse_one(body, read="trino")
        assert f'FROM "{DATABASE}"."events_raw"' in body and "\"date\" = '2026-03-10'" in body
    assert all(
        f"s3://{config.events_bucket()}/{athena.UNLOAD_PREFIX}holdout=h1/date=2026-03-10/" in q
        for q in unloads
    )
