"""The stored prompt and the answered prompt (models/prompts.py), without a server or a store.

A stored item must read and write back unchanged, whatever shape it was written in; the answer
built from it must be the stored public fields, in their stored order, then `isArchived`.
"""

from __future__ import annotations

from typing import Any

import pytest

from expconsole.models.prompts import Prompt, PromptCreate, PromptFields, PromptPatch, StoredPrompt
from expconsole.services.prompts import present
from tests.unit.stored_items import CREATED_AND_MODIFIED, assert_state_optional, assert_written_back, written

# A prompt as services/prompts.py writes it, nulls where it stores them.
STORED: dict[str, Any] = {
    "id": "writer",
    "name": "writer",
    "displayName": "Writer",
    "description": "d",
    "idType": "userID",
    "tags": ["ai"],
    "targetApps": ["web"],
    "holdoutIDs": [],
    "team": None,
    "teamID": "t1",
    "owner": {"ownerID": "k1", "ownerType": "SDK_KEY", "ownerName": "CONSOLE API", "ownerEmail": ""},
    **CREATED_AND_MODIFIED,
    "version": 2,
    "_state": {"archived": False},
}


def test_a_stored_prompt_reads_and_writes_back_byte_for_byte() -> None:
    prompt = StoredPrompt.read(STORED)
    assert prompt.state.archived is False
    assert written(prompt.doc()) == written(STORED)


@pytest.mark.parametrize(
    "older",
    [
        # No `_state` at all.
        {k: v for k, v in STORED.items() if k != "_state"},
        # Archived, with a null reason, and an internal key of another module after it.
        {**STORED, "_state": {"archived": True, "archiveReason": None, "archivedTime": 5}, "_health": {}},
        # State keys the prompt does not declare: a passed schedule lifecycle.is_archived reads.
        {**STORED, "_state": {"archived": False, "scheduledArchiveTime": 5, "note": "kept"}},
    ],
)
def test_an_older_shape_reads_and_writes_back_unchanged(older: dict[str, Any]) -> None:
    assert_written_back(StoredPrompt, older)


def test_a_missing_state_reads_as_not_archived_and_is_not_written() -> None:
    assert_state_optional(StoredPrompt, STORED)


def test_set_fields_validates_json_values_as_the_stored_types() -> None:
    prompt = StoredPrompt.read(STORED)
    prompt.set_fields({"targetApps": ["ios"], "team": "core", "description": "new"})
    assert prompt.doc()["targetApps"] == ["ios"]
    assert list(prompt.doc()) == list(STORED), "a change keeps every key where it was"


def test_the_answer_is_the_stored_public_fields_in_order_then_is_archived() -> None:
    answered = {k: v for k, v in STORED.items() if k != "_state"}
    answer = present(StoredPrompt.read(STORED)).model_dump(mode="json")
    assert written(answer) == written({**answered, "isArchived": False})
    archived = {**STORED, "_state": {"archived": True, "archiveReason": None, "archivedTime": 5}}
    assert present(StoredPrompt.read(archived)).isArchived is True


def test_request_fields_are_prompt_fields() -> None:
    """A field a client may send is a `PromptFields` field (stored and answered as it is named),
    so adding one is a line there and one per request model."""
    assert PromptCreate.model_fields.keys() <= PromptFields.model_fields.keys()
    assert PromptPatch.model_fields.keys() <= PromptFields.model_fields.keys()
    assert list(Prompt.model_fields) == [*PromptFields.model_fields, "isArchived"]
