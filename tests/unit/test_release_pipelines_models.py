"""The stored pipeline and the answered pipeline (models/release_pipelines.py), without a server
or a store.

A stored item must read and write back unchanged, whatever shape it was written in; the answer
built from it must be the stored fields but the emails, in their stored order, then `isArchived`.
"""

from __future__ import annotations

from typing import Any

import pytest

from expconsole.models.release_pipelines import (
    PipelineCreate,
    PipelineFields,
    ReleasePipeline,
    StoredPipeline,
)
from expconsole.services.common import lifecycle
from expconsole.services.release_pipelines import present
from tests.unit.stored_items import CREATED_AND_MODIFIED, assert_state_optional, written

# A pipeline as services/release_pipelines.py writes it, nulls where it stores them.
STORED: dict[str, Any] = {
    "id": "p1",
    "name": "staged",
    "phases": [
        {
            "id": "ph1",
            "name": "canary",
            "timeIntervalMs": 0,
            "requiredReview": True,
            "rules": [
                {
                    "id": "r1",
                    "name": "us",
                    "conditions": [
                        {"type": "country", "operator": "any", "targetValue": ["US"]},
                        {"type": "public"},
                    ],
                    "environments": None,
                }
            ],
        },
        {"id": "ph2", "name": "all", "timeIntervalMs": 3_600_000, "requiredReview": False, "rules": []},
    ],
    **CREATED_AND_MODIFIED,
    "version": 2,
    "_state": {"archived": False},
}


@pytest.mark.parametrize(
    "stored",
    [
        STORED,
        # No `_state` at all.
        {k: v for k, v in STORED.items() if k != "_state"},
        # Archived, with a null reason, and an internal key of another module after it.
        {**STORED, "_state": {"archived": True, "archiveReason": None, "archivedTime": 5}, "_health": {}},
        # State keys the pipeline does not declare: a passed schedule lifecycle.is_archived reads.
        {**STORED, "_state": {"archived": False, "scheduledArchiveTime": 5, "note": "kept"}},
    ],
)
def test_a_stored_pipeline_reads_and_writes_back_byte_for_byte(stored: dict[str, Any]) -> None:
    pipeline = StoredPipeline.read(stored)
    assert written(pipeline.doc()) == written(stored)
    assert lifecycle.is_archived(pipeline.doc(), now=10) == lifecycle.is_archived(stored, now=10)


def test_a_missing_state_reads_as_not_archived_and_is_not_written() -> None:
    assert_state_optional(StoredPipeline, STORED)


def test_set_fields_keeps_every_key_where_it_was() -> None:
    pipeline = StoredPipeline.read(STORED)
    pipeline.set_fields({"name": "renamed", "phases": STORED["phases"][1:]})
    assert written(pipeline.doc()) == written({**STORED, "name": "renamed", "phases": STORED["phases"][1:]})


def test_the_answer_is_the_stored_fields_but_the_emails_then_is_archived() -> None:
    hidden = ("creatorEmail", "lastModifierEmail", "_state")
    answered = {k: v for k, v in STORED.items() if k not in hidden}
    stored = StoredPipeline.read({**STORED, "creatorEmail": "a@b.c", "_health": {}})
    shown = present(stored).model_dump(mode="json")
    assert written(shown) == written({**answered, "isArchived": False})
    schema = ReleasePipeline.model_json_schema()
    assert not {"creatorEmail", "lastModifierEmail"} & schema["properties"].keys()


def test_request_fields_are_pipeline_fields() -> None:
    """A field a client may send is a `PipelineFields` field (stored and answered as it is named),
    so adding one is a line there and one per request model."""
    assert PipelineCreate.model_fields.keys() <= PipelineFields.model_fields.keys()
    assert list(ReleasePipeline.model_fields) == [*PipelineFields.model_fields, "isArchived"]
