"""The local backend's journal: a long one is compacted at start into the state it rebuilt.

What a user relies on: after any number of restarts the data is what it was (items, objects with
their content type and metadata, deletions), and a journal of overwrites does not grow forever.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from expconsole import aws
from expconsole.store import s3 as store_s3
from expconsole_tools.local.backend import (
    COMPACT_AFTER,
    JOURNAL_FILE,
    LOCAL_BUCKET,
    LOCAL_TABLE,
    EmbeddedBackend,
)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / ".expconsole"


def started(data_dir: Path) -> EmbeddedBackend:
    backend = EmbeddedBackend(data_dir)
    backend.start()
    return backend


def journal_lines(data_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (data_dir / JOURNAL_FILE).read_bytes().splitlines()]


def state() -> dict[str, Any]:
    """Everything a client can read back: each table's items and each bucket's objects."""
    dynamodb, s3 = aws.client("dynamodb"), aws.client("s3")
    tables = {}
    for table in dynamodb.list_tables()["TableNames"]:
        items = dynamodb.scan(TableName=table, ConsistentRead=True)["Items"]
        tables[table] = sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
        described = dynamodb.describe_table(TableName=table)["Table"]
        tables[f"{table} indexes"] = sorted(
            i["IndexName"] for i in described.get("GlobalSecondaryIndexes", [])
        )
        tables[f"{table} ttl"] = dynamodb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    objects = {}
    for bucket in s3.list_buckets()["Buckets"]:
        for listed in s3.list_objects_v2(Bucket=bucket["Name"]).get("Contents", []):
            obj = s3.get_object(Bucket=bucket["Name"], Key=listed["Key"])
            objects[f"{bucket['Name']}/{listed['Key']}"] = (
                obj["Body"].read(),
                obj["ContentType"],
                obj.get("ContentEncoding"),
                obj.get("Metadata", {}),
            )
    return {"tables": tables, "objects": objects}


def overwrite_and_delete(times: int) -> None:
    """Writes as the product makes them: one item updated `times` times, items and objects
    written then deleted, objects overwritten, keys that need quoting, metadata."""
    dynamodb, s3 = aws.client("dynamodb"), aws.client("s3")
    for n in range(times):
        dynamodb.put_item(
            TableName=LOCAL_TABLE,
            Item={"PK": {"S": "COUNTER#1"}, "SK": {"S": "CURRENT"}, "n": {"N": str(n)}},
        )
    for n in range(40):
        dynamodb.put_item(
            TableName=LOCAL_TABLE,
            Item={"PK": {"S": f"ITEM#{n}"}, "SK": {"S": "CURRENT"}, "tags": {"SS": ["a", f"t{n}"]}},
        )
    for n in range(0, 40, 3):
        dynamodb.delete_item(TableName=LOCAL_TABLE, Key={"PK": {"S": f"ITEM#{n}"}, "SK": {"S": "CURRENT"}})
    for n in range(5):
        store_s3.put_object("pulse/experiment=e1/result.json", f'{{"run": {n}}}'.encode(), "application/json")
    s3.put_object(
        Bucket=LOCAL_BUCKET,
        Key="imports/date=2026-11-27/a b+c (1).csv",
        Body=b"userID,event\nu1,click\n",
        ContentType="text/csv",
        Metadata={"source": "upload", "rows": "1"},
    )
    s3.put_object(  # as the SDK documents are stored: gzip bytes, served as such
        Bucket=LOCAL_BUCKET,
        Key="sdk/specs/v2.json.gz",
        Body=gzip.compress(b'{"feature_gates": []}'),
        ContentType="application/json",
        ContentEncoding="gzip",
        Metadata={"digest": "d1"},
    )
    s3.put_object(Bucket=LOCAL_BUCKET, Key="gone.json", Body=b"{}")
    s3.delete_object(Bucket=LOCAL_BUCKET, Key="gone.json")


def test_a_long_journal_is_compacted_into_the_state_it_rebuilt(
    data_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    backend = started(data_dir)
    try:
        overwrite_and_delete(COMPACT_AFTER + 200)
        before = state()
    finally:
        backend.stop()
    long = len(journal_lines(data_dir))
    assert long > COMPACT_AFTER + 200

    backend = started(data_dir)
    try:
        assert backend.replayed == long
        assert backend.compacted is not None
        replayed, written = backend.compacted
        assert replayed == long
        assert state() == before
    finally:
        backend.stop()
    lines = journal_lines(data_dir)
    # The set-up (table, TTL, bucket), 27 items in two batches, four objects; nothing else.
    assert len(lines) == written < 20
    assert not (data_dir / f"{JOURNAL_FILE}.compacting").exists()
    assert "compacted" in capfd.readouterr().err

    backend = started(data_dir)  # the compacted journal replays to the same state, and stays
    try:
        assert backend.replayed == written and backend.compacted is None
        assert state() == before
        aws.client("dynamodb").put_item(
            TableName=LOCAL_TABLE, Item={"PK": {"S": "AFTER#1"}, "SK": {"S": "CURRENT"}}
        )
    finally:
        backend.stop()
    assert len(journal_lines(data_dir)) == written + 1  # appending goes on after a compaction


def test_a_short_journal_is_replayed_as_it_is(data_dir: Path) -> None:
    backend = started(data_dir)
    try:
        overwrite_and_delete(50)
        before = state()
    finally:
        backend.stop()
    journal = (data_dir / JOURNAL_FILE).read_bytes()

    backend = started(data_dir)
    try:
        assert backend.compacted is None
        assert state() == before
    finally:
        backend.stop()
    assert (data_dir / JOURNAL_FILE).read_bytes() == journal


def test_a_journal_that_would_not_halve_is_left_as_it_is(data_dir: Path) -> None:
    """Many distinct items and few overwrites: compaction would save little, so it is not done."""
    backend = started(data_dir)
    try:
        s3 = aws.client("s3")
        for n in range(COMPACT_AFTER + 10):
            s3.put_object(Bucket=LOCAL_BUCKET, Key=f"events/date=2026-11-27/{n}.jsonl", Body=b"{}\n")
    finally:
        backend.stop()
    journal = (data_dir / JOURNAL_FILE).read_bytes()

    backend = started(data_dir)
    try:
        assert backend.replayed > COMPACT_AFTER and backend.compacted is None
    finally:
        backend.stop()
    assert (data_dir / JOURNAL_FILE).read_bytes() == journal


@pytest.fixture(autouse=True)
def _no_leftover_backend() -> Iterator[None]:
    yield
    assert not EmbeddedBackend._active
