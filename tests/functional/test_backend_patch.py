"""The embedded backend's moto patch keeps transactions all-or-nothing while copying less."""

from __future__ import annotations

import copy

import pytest

from expconsole.store import dynamo
from expconsole_tools.local.backend import _copy_tables_once_per_transaction


def test_failed_transaction_still_rolls_back_every_item(aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    _copy_tables_once_per_transaction()
    for i in range(5):
        dynamo.create("GATE", f"g{i}", {"id": f"g{i}", "version": 1, "createdTime": i})
    table_copies = []
    real = copy.deepcopy

    def counting(obj, memo=None):  # type: ignore[no-untyped-def]
        if type(obj).__name__ == "Table":
            table_copies.append(obj)
        return real(obj, memo)

    monkeypatch.setattr(copy, "deepcopy", counting)
    good = [("GATE", f"g{i}", {"id": f"g{i}", "version": 2, "createdTime": i}, 1) for i in range(4)]
    stale = ("GATE", "g4", {"id": "g4", "version": 9, "createdTime": 4}, 8)
    with pytest.raises(dynamo.StoreConflict):
        dynamo.write_many(replaces=[*good, stale])
    assert [dynamo.get("GATE", f"g{i}")["version"] for i in range(5)] == [1, 1, 1, 1, 1]
    assert len(table_copies) == 1  # one backup of the table for a ten-item transaction
    dynamo.write_many(replaces=good)
    assert [dynamo.get("GATE", f"g{i}")["version"] for i in range(4)] == [2, 2, 2, 2]
