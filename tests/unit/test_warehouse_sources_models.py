"""The stored and answered warehouse sources (models/warehouse_sources.py), without a server or
a store.

A stored item must read and write back unchanged, whatever shape it was written in; the answer
built from it must be its stored public fields, in their stored order; the keys a source stores
only when set are left out, never null.
"""

from __future__ import annotations

from typing import Any

import pytest

from expconsole.models.warehouse_sources import (
    AssignmentSource,
    AssignmentSourceCreate,
    AssignmentSourceFields,
    AssignmentSourcePatch,
    AssignmentSourceUpdate,
    QualifyingEvent,
    QualifyingEventCreate,
    QualifyingEventFields,
    QualifyingEventUpdate,
    StoredAssignmentSource,
    StoredQualifyingEvent,
)
from tests.unit.stored_items import CREATED_AND_MODIFIED, written

BOOKKEEPING: dict[str, Any] = {
    **CREATED_AND_MODIFIED,
    "version": 2,
}
OWNER = {"ownerID": "k1", "ownerType": "SDK_KEY", "ownerName": "CONSOLE API", "ownerEmail": ""}

# Sources as services/warehouse_sources.py writes them, nulls where it stores them, with every
# key stored only when set (in the order it writes them: after the bookkeeping).
QUALIFYING_EVENT: dict[str, Any] = {
    "name": "Log Events",
    "description": "d",
    "tags": ["t"],
    "sql": "SELECT * FROM analytics.events",
    "timestampColumn": "ts",
    "timestampAsDay": False,
    "idTypeMapping": [{"serviceUnitID": "userID", "column": "user_id"}],
    "sourceType": "table",
    "tableName": "analytics.events",
    "customFieldMapping": [{"key": "p", "formula": "price * 2"}],
    "isReadOnly": False,
    "isVerified": True,
    "disableCURE": False,
    "owner": OWNER,
    "team": None,
    "teamID": "t1",
    **BOOKKEEPING,
    "datePartitionColumn": "event_date",
    "all_columns": ["user_id", "ts", "event_date"],
    "column_types": ["string", "timestamp", "date"],
}
ASSIGNMENT_SOURCE: dict[str, Any] = {
    "name": "Exposures",
    "description": "",
    "tags": [],
    "sql": "SELECT user_id, ts, experiment_id, group_id, group_name FROM analytics.exposures",
    "timestampColumn": "ts",
    "experimentIDColumn": "experiment_id",
    "groupIDColumn": "group_id",
    "idTypeMapping": [{"serviceUnitID": "userID", "column": "user_id"}],
    "isVerified": False,
    "isReadOnly": False,
    "owner": OWNER,
    "team": None,
    "teamID": None,
    "scheduledReloadHour": None,
    **BOOKKEEPING,
    "groupNameColumn": "group_name",
}
OPTIONAL = {"datePartitionColumn", "all_columns", "column_types", "groupNameColumn"}


def without(doc: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in keys}


@pytest.mark.parametrize(
    ("model", "stored"),
    [
        (StoredQualifyingEvent, QUALIFYING_EVENT),
        (StoredQualifyingEvent, without(QUALIFYING_EVENT, *OPTIONAL)),
        (StoredQualifyingEvent, {**QUALIFYING_EVENT, "_health": {"a": 1}}),
        (StoredAssignmentSource, ASSIGNMENT_SOURCE),
        (StoredAssignmentSource, without(ASSIGNMENT_SOURCE, "groupNameColumn")),
        (StoredAssignmentSource, {**ASSIGNMENT_SOURCE, "_other": [1]}),
    ],
)
def test_a_stored_source_reads_and_writes_back_byte_for_byte(
    model: type[StoredQualifyingEvent | StoredAssignmentSource], stored: dict[str, Any]
) -> None:
    assert written(model.read(stored).doc()) == written(stored)


def test_a_null_optional_key_is_left_out_where_a_change_clears_it() -> None:
    source = StoredQualifyingEvent.read(QUALIFYING_EVENT)
    source.set_fields({"datePartitionColumn": None, "description": "new"})
    assert list(source.doc()) == [k for k in QUALIFYING_EVENT if k != "datePartitionColumn"]
    source.set_fields({"datePartitionColumn": "day"})
    assert list(source.doc()) == list(QUALIFYING_EVENT), "set again, it is stored where it was"
    assigned = StoredAssignmentSource.read(ASSIGNMENT_SOURCE)
    assigned.set_fields({"groupNameColumn": None})
    assert "groupNameColumn" not in assigned.doc()


@pytest.mark.parametrize(
    ("answer", "stored"),
    [
        (QualifyingEvent, QUALIFYING_EVENT),
        (QualifyingEvent, without(QUALIFYING_EVENT, *OPTIONAL)),
        (AssignmentSource, ASSIGNMENT_SOURCE),
        (AssignmentSource, without(ASSIGNMENT_SOURCE, "groupNameColumn")),
    ],
)
def test_the_answer_is_the_stored_fields_in_order(
    answer: type[QualifyingEvent | AssignmentSource], stored: dict[str, Any]
) -> None:
    assert written(answer.model_validate(stored).model_dump(mode="json")) == written(stored)


def test_stored_fields_of_a_request_are_source_fields() -> None:
    """A field a client may send is a source field (stored and answered as it is named) unless
    it steers the request, so adding one is a line in the fields model and one per request."""
    steering = {"dryRun", "skip_validation", "version"}
    assert QualifyingEventCreate.model_fields.keys() - steering <= QualifyingEventFields.model_fields.keys()
    assert QualifyingEventUpdate.model_fields.keys() - steering <= QualifyingEventFields.model_fields.keys()
    for request in (AssignmentSourceCreate, AssignmentSourceUpdate, AssignmentSourcePatch):
        assert request.model_fields.keys() - steering <= AssignmentSourceFields.model_fields.keys()
    assert list(QualifyingEvent.model_fields) == list(QualifyingEventFields.model_fields)
    assert list(AssignmentSource.model_fields) == list(AssignmentSourceFields.model_fields)
