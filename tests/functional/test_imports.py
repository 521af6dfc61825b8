"""Bulk import on moto: formats, validation and reasons, reports, idempotence, the trigger's events."""

from __future__ import annotations

import gzip
import io
import json
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote_plus

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from expconsole import aws as aws_clients
from expconsole import config
from expconsole.services import imports
from expconsole.store import event_counters, s3
from tests.conftest import Caller, load_function

DAY = "2025-06-15"
START = int(datetime(2025, 6, 15, tzinfo=UTC).timestamp() * 1000)
DAY_MS = 86_400_000


def now_ms() -> int:
    return int(time.time() * 1000)


class _Context:
    function_name = "imports"
    function_version = "$LATEST"
    memory_limit_in_mb = 2048
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:imports"
    aws_request_id = "req"


@pytest.fixture
def bucket(aws: None) -> None:
    s3.create_bucket()


def key_of(name: str, day: str = DAY) -> str:
    return f"imports/date={day}/{name}"


def put(name: str, body: bytes | str, day: str = DAY) -> str:
    key = key_of(name, day)
    data = body.encode() if isinstance(body, str) else body
    aws_clients.client("s3").put_object(Bucket=config.events_bucket(), Key=key, Body=data)
    return key


def jsonl(*rows: Any) -> str:
    return "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows)


def ev(name: str = "buy", ts: int = START + 1000, **fields: Any) -> dict[str, Any]:
    return {"event": name, "user": {"userID": "u1"}, "timestamp": ts, "metadata": {}, **fields}


def parquet(table: pa.Table) -> bytes:
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def stored() -> list[dict[str, Any]]:
    lines = []
    for key in sorted(s3.keys(s3.PREFIX)):
        lines.extend(json.loads(line) for line in s3.decode(s3.get(key)))
    return lines


def event_keys() -> list[str]:
    return sorted(s3.keys(s3.PREFIX))


def report(key: str) -> dict[str, Any]:
    return json.loads(s3.get(imports.report_key(key)))


def rejected(key: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in s3.get(imports.rejected_key(key)).decode().splitlines()]


def counts(day: str = DAY) -> dict[str, int]:
    return {c["name"]: c["count"] for c in event_counters.for_day(day)}


# --- JSON lines ----------------------------------------------------------------------------------


def test_json_lines_rows_are_stored_as_ingestion_stores_them(bucket: None) -> None:
    event = ev("signup", metadata={"plan": "pro"}, value=12.5, user={"userID": "alice", "country": "FR"})
    key = put("events.jsonl", jsonl(event))
    before = now_ms()
    outcome = imports.import_object(key)
    assert outcome["status"] == "imported"

    ingest = Caller("ingest")
    status, _ = ingest(
        "POST", "/v1/webhooks/event_webhook", {**event, "event": "signup_ingested"}, key_kind="server"
    )
    assert status == 202
    by_source = {line["source"]: line for line in stored()}
    imported, ingested = by_source["import:events.jsonl"], by_source["webhook"]
    assert set(imported) == set(ingested)
    assert {k: v for k, v in imported.items() if k not in ("source", "receivedTime", "event")} == {
        k: v for k, v in ingested.items() if k not in ("source", "receivedTime", "event")
    }
    assert imported["receivedTime"] >= before
    assert all(k.startswith(f"events/date={DAY}/") and k.endswith(".jsonl.gz") for k in event_keys())
    assert counts() == {"signup": 1, "signup_ingested": 1}


def test_bad_json_lines_rows_are_rejected_with_their_row_line_and_reasons(bucket: None) -> None:
    body = jsonl(
        ev("ok"),
        "{not json",
        ev("no_user", user={}),
        "",
        {"event": "no_ts", "user": {"userID": "u"}},
        ev("before", ts=START - 1),
        ev("after", ts=START + DAY_MS),
        7,
        ev("extra", colour="red"),
        json.dumps(ev("nan", ts=START + 5)).replace('"metadata": {}', '"metadata": {"x": NaN}'),
        ev("ok"),
    )
    key = put("mixed.jsonl", body)
    imports.import_object(key)

    rep = report(key)
    assert (rep["rows"], rep["accepted"], rep["rejected"]) == (10, 2, 8)
    rows = {r["row"]: r for r in rejected(key)}
    assert sorted(rows) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert rows[1]["line"] == 2 and "not valid JSON" in rows[1]["reasons"][0]
    assert rows[1]["input"] == "{not json"
    assert any(r.startswith("user:") and "userID or stableID" in r for r in rows[2]["reasons"])
    assert rows[3]["line"] == 5  # the blank line 4 is not a row
    assert rows[3]["reasons"][0].startswith("timestamp:") and "required" in rows[3]["reasons"][0]
    for index in (4, 5):
        (reason,) = rows[index]["reasons"]
        assert reason.startswith("timestamp:") and DAY in reason and "outside" in reason
    assert "must be an object" in rows[6]["reasons"][0]
    assert rows[7]["reasons"][0].startswith("colour:") and "unknown field" in rows[7]["reasons"][0]
    assert "NaN" in rows[8]["reasons"][0]
    assert json.loads(rows[4]["input"])["event"] == "before"
    assert [line["event"] for line in stored()] == ["ok", "ok"]
    assert counts() == {"ok": 2}


def test_a_json_array_file_is_refused_as_a_whole(bucket: None) -> None:
    key = put("array.json", json.dumps([ev(), ev()], indent=2))
    outcome = imports.import_object(key)
    assert outcome["status"] == "failed"
    assert "JSON lines" in report(key)["error"]
    assert stored() == [] and rejected(key) == []


# --- CSV -----------------------------------------------------------------------------------------


def test_csv_cells_are_text_unless_the_column_declares_a_type(bucket: None) -> None:
    header = "event,timestamp,userID,stableID,value,metadata.code,metadata.price:number,metadata.beta:boolean"
    body = "\n".join(
        [
            header + ",user.tags:json,user.country",
            f'buy,{START + 1},u1,,12,007,9.5,TRUE,"[""a""]",FR',
            f"buy,{START + 2},,dev-2,,,,,,",
        ]
    )
    key = put("typed.csv", body)
    imports.import_object(key)
    assert report(key)["accepted"] == 2
    first, second = sorted(stored(), key=lambda line: line["timestamp"])
    assert first["value"] == "12"  # text: the column is not declared :number
    assert first["metadata"] == {"code": "007", "price": 9.5, "beta": True}
    assert first["user"] == {"userID": "u1", "tags": ["a"], "country": "FR"}
    assert first["timestamp"] == START + 1
    assert second["user"] == {"stableID": "dev-2"}  # empty cells are absent
    assert second["metadata"] == {} and "value" not in second


def test_csv_json_object_columns_and_a_numeric_value_column(bucket: None) -> None:
    body = (
        "event,timestamp,value:number,user,metadata\n"
        f'view,{START + 3},3,"{{""userID"": ""u9"", ""plan"": ""pro""}}",'
        '"{""page"": ""/home"", ""n"": 2}"\n'
    )
    key = put("json_columns.csv", body)
    imports.import_object(key)
    (line,) = stored()
    assert line["value"] == 3
    assert line["user"] == {"userID": "u9", "plan": "pro"}
    assert line["metadata"] == {"page": "/home", "n": 2}


def test_csv_rows_that_do_not_convert_are_rejected_with_reasons(bucket: None) -> None:
    body = "\n".join(
        [
            "event,timestamp,userID,value:number,metadata",
            f"ok,{START + 1},u1,1,",
            "bad_ts,2025-06-15T10:00:00Z,u1,,",
            f"bad_number,{START + 1},u1,twelve,",
            f'bad_json,{START + 1},u1,,"{{oops"',
            f'not_object,{START + 1},u1,,"[1]"',
            f"short,{START + 1}",
            "no_ts,,u1,,",
            f"late,{START + DAY_MS + 5},u1,,",
        ]
    )
    key = put("bad.csv", body)
    imports.import_object(key)
    rep = report(key)
    assert (rep["rows"], rep["accepted"], rep["rejected"]) == (8, 1, 7)
    rows = {r["input"]["event"] if isinstance(r["input"], dict) else r["input"][0]: r for r in rejected(key)}
    assert rows["bad_ts"]["reasons"][0].startswith("timestamp:") and "integer" in rows["bad_ts"]["reasons"][0]
    assert rows["bad_ts"]["line"] == 3 and rows["bad_ts"]["row"] == 1
    assert rows["bad_ts"]["input"]["timestamp"] == "2025-06-15T10:00:00Z"
    assert rows["bad_number"]["reasons"][0].startswith("value:number:")
    assert rows["bad_json"]["reasons"][0].startswith("metadata:")
    assert "object" in rows["not_object"]["reasons"][0]
    assert "cells" in rows["short"]["reasons"][0]
    assert "required" in rows["no_ts"]["reasons"][0]
    assert DAY in rows["late"]["reasons"][0]
    assert [line["event"] for line in stored()] == ["ok"]


@pytest.mark.parametrize(
    ("header", "words"),
    [
        ("event,timestamp,userID,colour", "unknown column"),
        ("event,timestamp,userID,user.userID", "both set user.userID"),
        ("event,userID", "no timestamp column"),
        ("timestamp,userID", "no event column"),
        ("event,timestamp,value", "no user column"),
        ("event,timestamp:number,userID", "take a type"),
    ],
)
def test_a_csv_header_that_cannot_be_read_fails_the_file(bucket: None, header: str, words: str) -> None:
    key = put("header.csv", f"{header}\nbuy,{START + 1},u1,x\n")
    outcome = imports.import_object(key)
    assert outcome["status"] == "failed"
    assert words in report(key)["error"]
    assert stored() == [] and counts() == {}


# --- Parquet -------------------------------------------------------------------------------------


def test_parquet_struct_and_map_columns_and_timestamp_types(bucket: None) -> None:
    table = pa.table(
        {
            "event": ["a", "b", "c"],
            "timestamp": pa.array(
                [datetime(2025, 6, 15, 1, 2, 3, 4567), datetime(2025, 6, 15, 5), datetime(2025, 6, 16, 0)],
                pa.timestamp("us"),
            ),
            "user": pa.array(
                [{"userID": "u1", "country": "FR"}, {"userID": "u2", "country": None}, {"userID": "u3"}],
                pa.struct([("userID", pa.string()), ("country", pa.string())]),
            ),
            "metadata": pa.array([[("k", "v")], [], None], pa.map_(pa.string(), pa.string())),
            "value": [1.5, None, 2.0],
        }
    )
    key = put("struct.parquet", parquet(table))
    imports.import_object(key)
    rep = report(key)
    assert (rep["rows"], rep["accepted"], rep["rejected"]) == (3, 2, 1)
    a, b = sorted(stored(), key=lambda line: line["event"])
    assert a["timestamp"] == int(datetime(2025, 6, 15, 1, 2, 3, 4000, tzinfo=UTC).timestamp() * 1000)
    assert a["user"] == {"userID": "u1", "country": "FR"}
    assert a["metadata"] == {"k": "v"} and a["value"] == 1.5
    assert b["user"] == {"userID": "u2"} and b["metadata"] == {} and "value" not in b
    (row,) = rejected(key)
    assert row["row"] == 2 and "outside" in row["reasons"][0]
    assert row["input"]["event"] == "c"


def test_parquet_json_text_and_dotted_columns_with_int_ms_and_zoned_timestamps(bucket: None) -> None:
    table = pa.table(
        {
            "event": ["x", "y"],
            "timestamp": pa.array([START + 10, START + 20], pa.int64()),
            "userID": ["u1", None],
            "stableID": [None, "s2"],
            "metadata": ['{"plan": "pro"}', "not json"],
            "user.age": pa.array([30, None], pa.int64()),
        }
    )
    key = put("text.parquet", parquet(table))
    imports.import_object(key)
    (line,) = stored()
    assert line == {**line, "event": "x", "timestamp": START + 10, "metadata": {"plan": "pro"}}
    assert line["user"] == {"userID": "u1", "age": 30}
    (row,) = rejected(key)
    assert row["reasons"][0].startswith("metadata:")

    zoned = pa.table(
        {
            "event": ["z"],
            "timestamp": pa.array([START // 1000 + 60], pa.timestamp("s", tz="Europe/Paris")),
            "stableID": ["s"],
        }
    )
    key = put("zoned.parquet", parquet(zoned))
    imports.import_object(key)
    assert [line["timestamp"] for line in stored() if line["event"] == "z"] == [START + 60_000]


def test_a_file_that_is_not_parquet_fails_and_stores_nothing(bucket: None) -> None:
    key = put("broken.parquet", b"PAR1 this is not parquet")
    outcome = imports.import_object(key)
    assert outcome["status"] == "failed"
    rep = report(key)
    assert "Parquet" in rep["error"]
    assert (rep["accepted"], rep["objects"]) == (0, [])
    assert stored() == [] and counts() == {}
    assert rejected(key) == []


# --- gzip ----------------------------------------------------------------------------------------


def test_gzip_inputs_of_each_format(bucket: None) -> None:
    table = pa.table({"event": ["p"], "timestamp": [START + 1], "userID": ["u"]})
    keys = [
        put("a.jsonl.gz", gzip.compress(jsonl(ev("j")).encode())),
        put("b.csv.gz", gzip.compress(f"event,timestamp,userID\nc,{START + 2},u\n".encode())),
        put("c.parquet.gz", gzip.compress(parquet(table))),
    ]
    for key in keys:
        assert imports.import_object(key)["status"] == "imported"
    assert sorted(line["event"] for line in stored()) == ["c", "j", "p"]
    assert {line["source"] for line in stored()} == {
        "import:a.jsonl.gz",
        "import:b.csv.gz",
        "import:c.parquet.gz",
    }


def test_a_truncated_gzip_file_stores_nothing(bucket: None) -> None:
    packed = gzip.compress(jsonl(*[ev(ts=START + i) for i in range(2000)]).encode())
    key = put("cut.jsonl.gz", packed[: len(packed) // 2])
    assert imports.import_object(key)["status"] == "failed"
    assert "cannot be read" in report(key)["error"]
    assert stored() == [] and counts() == {}


# --- idempotence, chunks, storage failures -------------------------------------------------------


def test_importing_again_rewrites_the_same_objects_and_counts_nothing_twice(
    bucket: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(imports, "CHUNK_ROWS", 3)
    body = jsonl(*[ev("tick", ts=START + i) for i in range(7)], ev("tock", ts=START + 99))
    key = put("ticks.jsonl", body)
    imports.import_object(key)
    first_keys, first_counts = event_keys(), counts()
    assert len(first_keys) == 3  # 8 rows in chunks of 3
    assert sorted(report(key)["objects"]) == first_keys
    assert first_counts == {"tick": 7, "tock": 1}

    imports.import_object(key)
    put("copy-of-ticks.jsonl", body)
    imports.import_object(key_of("copy-of-ticks.jsonl"))
    assert event_keys() == first_keys
    assert counts() == first_counts
    assert len(stored()) == 8

    put("ticks.jsonl", body + jsonl(ev("tock", ts=START + 100)))  # new content: new objects
    imports.import_object(key)
    assert counts() == {"tick": 14, "tock": 3}


def test_a_storage_failure_raises_reports_it_and_the_rerun_stores_once(
    bucket: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(imports, "CHUNK_ROWS", 2)
    key = put("flaky.jsonl", jsonl(*[ev(ts=START + i) for i in range(5)]))
    real_put = s3.put
    calls: list[str] = []

    def flaky_put(object_key: str, body: bytes) -> None:
        calls.append(object_key)
        if len(calls) == 2:
            raise RuntimeError("S3 is down")
        real_put(object_key, body)

    monkeypatch.setattr(s3, "put", flaky_put)
    with pytest.raises(Exception, match="stor"):
        imports.import_object(key)
    assert "again" in report(key)["error"]

    monkeypatch.setattr(s3, "put", real_put)
    assert imports.import_object(key)["status"] == "imported"
    assert "error" not in report(key)
    assert len(stored()) == 5 and counts() == {"buy": 5}


# --- reports and keys ----------------------------------------------------------------------------


def test_the_report_is_written_beside_the_input(bucket: None) -> None:
    body = jsonl(ev("a"), ev("b", user={}))
    key = put("nested/dir/events.ndjson", body)
    before = now_ms()
    imports.import_object(key)
    assert imports.report_key(key) == key_of("nested/dir/_report.events.ndjson.json")
    assert imports.rejected_key(key) == key_of("nested/dir/_rejected.events.ndjson.jsonl")
    rep = report(key)
    assert rep["file"] == "nested/dir/events.ndjson" and rep["day"] == DAY
    assert rep["source"] == "import:nested/dir/events.ndjson"
    assert (rep["rows"], rep["accepted"], rep["rejected"]) == (2, 1, 1)
    assert sorted(rep["objects"]) == event_keys()
    assert rep["rejectedFile"] == imports.rejected_key(key)
    assert before <= rep["startedTime"] <= rep["finishedTime"] <= now_ms()
    assert rep["sha256"] == __import__("hashlib").sha256(body.encode()).hexdigest()
    assert "error" not in rep
    assert {line["source"] for line in stored()} == {"import:nested/dir/events.ndjson"}


def test_reports_hidden_files_and_other_keys_are_not_imported(bucket: None) -> None:
    for name in ("_report.x.json", "sub/_rejected.x.jsonl", ".hidden.jsonl"):
        key = put(name, jsonl(ev()))
        assert imports.import_object(key)["status"] == "skipped"
    for key in (
        "imports/events.jsonl",
        "imports/date=2025-02-30/x.jsonl",
        "imports/2025-06-15/x.jsonl",
        "other",
    ):
        assert imports.import_object(key)["status"] == "ignored"
    assert stored() == []


def test_an_unsupported_file_type_gets_a_report_saying_so(bucket: None) -> None:
    key = put("notes.txt", "hello")
    assert imports.import_object(key)["status"] == "failed"
    assert ".parquet" in report(key)["error"]


# --- the trigger ---------------------------------------------------------------------------------


def eventbridge(key: str, bucket_name: str | None = None) -> dict[str, Any]:
    return {
        "version": "0",
        "id": "e1",
        "detail-type": "Object Created",
        "source": "aws.s3",
        "account": "123456789012",
        "time": "2025-06-15T12:00:00Z",
        "region": "us-east-1",
        "resources": [],
        "detail": {
            "version": "0",
            "bucket": {"name": bucket_name or config.events_bucket()},
            "object": {"key": key, "size": 1},
            "reason": "PutObject",
        },
    }


def test_the_function_imports_the_object_an_eventbridge_event_names(bucket: None) -> None:
    handler = load_function("imports").lambda_handler
    key = put("from bridge.jsonl", jsonl(ev("bridge"), ev("bad", user={})))
    summary = handler(eventbridge(key), _Context())
    assert summary["imported"] == 1 and summary["failed"] == 0
    (entry,) = summary["files"]
    assert (entry["key"], entry["accepted"], entry["rejected"]) == (key, 1, 1)
    assert [line["event"] for line in stored()] == ["bridge"]

    assert handler(eventbridge(imports.report_key(key)), _Context())["skipped"] == 1
    assert handler(eventbridge(key, "someone-elses-bucket"), _Context())["ignored"] == 1
    assert handler(eventbridge(key_of("gone.jsonl")), _Context())["missing"] == 1
    assert (
        handler({"source": "aws.s3", "detail-type": "Object Deleted", "detail": {}}, _Context())["files"]
        == []
    )


def test_the_function_takes_s3_records_with_url_encoded_keys(bucket: None) -> None:
    handler = load_function("imports").lambda_handler
    key = put("with space+plus.jsonl", jsonl(ev("recorded")))
    record = {
        "eventSource": "aws:s3",
        "eventName": "ObjectCreated:Put",
        "s3": {"bucket": {"name": config.events_bucket()}, "object": {"key": quote_plus(key, safe="/")}},
    }
    assert "%3D" in record["s3"]["object"]["key"] and "+" in record["s3"]["object"]["key"]
    summary = handler({"Records": [record]}, _Context())
    assert summary["imported"] == 1, summary
    assert [line["source"] for line in stored()] == ["import:with space+plus.jsonl"]


def test_an_eventbridge_key_that_arrives_url_encoded_is_still_found(bucket: None) -> None:
    handler = load_function("imports").lambda_handler
    key = put("encoded name.jsonl", jsonl(ev("encoded")))
    summary = handler(eventbridge(quote_plus(key, safe="/=")), _Context())
    assert summary["imported"] == 1, summary
