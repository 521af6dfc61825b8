"""The DynamoDB store: optimistic locking, snapshots in the same transaction, hard delete."""

from __future__ import annotations

import pytest

from expconsole.store import dynamo


def doc(version: int, **fields: object) -> dict:
    return {"id": "g1", "version": version, "createdTime": 1_700_000_000_000, **fields}


def test_create_is_unique_and_writes_version_one(aws: None) -> None:
    dynamo.create("GATE", "g1", doc(1, name="first"))
    with pytest.raises(dynamo.StoreConflict):
        dynamo.create("GATE", "g1", doc(1, name="second"))
    assert dynamo.get("GATE", "g1")["name"] == "first"
    assert [v["version"] for v in dynamo.versions("GATE", "g1")] == [1]


def test_replace_needs_the_version_read_and_keeps_every_snapshot(aws: None) -> None:
    dynamo.create("GATE", "g1", doc(1, name="a"))
    dynamo.replace("GATE", "g1", doc(2, name="b"), expected_version=1)
    with pytest.raises(dynamo.StoreConflict):
        dynamo.replace("GATE", "g1", doc(2, name="lost update"), expected_version=1)
    assert dynamo.get("GATE", "g1")["name"] == "b"
    assert [(v["version"], v["name"]) for v in dynamo.versions("GATE", "g1")] == [(2, "b"), (1, "a")]


def test_a_failed_replace_writes_no_snapshot(aws: None) -> None:
    dynamo.create("GATE", "g1", doc(1))
    with pytest.raises(dynamo.StoreConflict):
        dynamo.replace("GATE", "g1", doc(5), expected_version=4)
    assert [v["version"] for v in dynamo.versions("GATE", "g1")] == [1]


def test_list_all_is_per_kind_in_creation_order(aws: None) -> None:
    dynamo.create("GATE", "b", {"id": "b", "version": 1, "createdTime": 2})
    dynamo.create("GATE", "a", {"id": "a", "version": 1, "createdTime": 1})
    dynamo.create("EXPERIMENT", "e", {"id": "e", "version": 1, "createdTime": 1})
    assert [d["id"] for d in dynamo.list_all("GATE")] == ["a", "b"]


def test_delete_removes_current_and_snapshots_but_only_at_the_version_read(aws: None) -> None:
    dynamo.create("GATE", "g1", doc(1))
    dynamo.replace("GATE", "g1", doc(2), expected_version=1)
    with pytest.raises(dynamo.StoreConflict):
        dynamo.delete("GATE", "g1", expected_version=1)
    dynamo.delete("GATE", "g1", expected_version=2)
    assert dynamo.get("GATE", "g1") is None
    assert dynamo.versions("GATE", "g1") == []
    dynamo.create("GATE", "g1", doc(1))  # the id is free again


def test_write_many_is_all_or_nothing(aws: None) -> None:
    dynamo.create("EXPERIMENT", "e1", {"id": "e1", "version": 1, "createdTime": 1, "holdoutIDs": []})
    dynamo.create("EXPERIMENT", "e2", {"id": "e2", "version": 1, "createdTime": 1, "holdoutIDs": []})
    holdout = {"id": "h1", "version": 1, "createdTime": 1, "experimentIDs": ["e1", "e2"]}
    e1 = {"id": "e1", "version": 2, "createdTime": 1, "holdoutIDs": ["h1"]}
    e2 = {"id": "e2", "version": 2, "createdTime": 1, "holdoutIDs": ["h1"]}
    with pytest.raises(dynamo.StoreConflict):  # e2 is not at version 5: nothing is written
        dynamo.write_many(
            creates=[("HOLDOUT", "h1", holdout)],
            replaces=[("EXPERIMENT", "e1", e1, 1), ("EXPERIMENT", "e2", e2, 5)],
        )
    assert dynamo.get("HOLDOUT", "h1") is None
    assert dynamo.get("EXPERIMENT", "e1")["holdoutIDs"] == []
    dynamo.write_many(
        creates=[("HOLDOUT", "h1", holdout)],
        replaces=[("EXPERIMENT", "e1", e1, 1), ("EXPERIMENT", "e2", e2, 1)],
    )
    assert dynamo.get("HOLDOUT", "h1")["experimentIDs"] == ["e1", "e2"]
    assert [v["version"] for v in dynamo.versions("EXPERIMENT", "e2")] == [2, 1]
