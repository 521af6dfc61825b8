"""The typed entity API (services.entities): a kind's stored model in, the stored model out, with
the bookkeeping and the optimistic lock every kind relies on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import ClassVar

import pytest

from expconsole import context, kinds
from expconsole.api.errors import status_of
from expconsole.errors import Conflict, NotFound
from expconsole.models.stored import StoredModel
from expconsole.services import entities
from expconsole.store import dynamo


class Note(StoredModel):
    """A stand-in kind: what every stored model has, plus one field to change."""

    KIND: ClassVar[str] = kinds.PROMPT

    id: str
    text: str
    creatorID: str | None
    creatorName: str
    creatorEmail: str | None
    createdTime: int
    lastModifierID: str | None
    lastModifierName: str | None
    lastModifierEmail: str | None
    lastModifiedTime: int
    version: int


@pytest.fixture
def store(aws: None) -> Iterator[None]:
    token = context.set_caller(context.Caller("key-1", "console"))
    yield
    context.reset(token)


def _note(text: str = "a") -> Note:
    return Note.model_validate({"id": "n", "text": text, **entities.bookkeeping()})


def test_insert_and_load_give_the_model_and_store_its_document(store: None) -> None:
    note = entities.insert(_note())
    assert entities.load(Note, "n") == note
    assert dynamo.get(kinds.PROMPT, "n") == note.doc()
    with pytest.raises(Conflict) as info:
        entities.insert(_note("b"))
    assert (status_of(info.value), info.value.message) == (409, "Prompt with id 'n' already exists.")
    with pytest.raises(NotFound):
        entities.load(Note, "missing")


def test_update_stores_the_next_version_with_the_modifier(store: None) -> None:
    entities.insert(_note())
    token = context.set_caller(context.Caller("key-2", "console"))
    try:
        note = entities.update(Note, "n", lambda n: n.set_fields({"text": "b"}), expected_version=1)
    finally:
        context.reset(token)
    assert (note.text, note.version, note.lastModifierID, note.creatorID) == ("b", 2, "key-2", "key-1")
    assert entities.load(Note, "n") == note
    assert [v["version"] for v in dynamo.versions(kinds.PROMPT, "n")] == [2, 1]


def test_a_stale_expected_version_is_a_409_and_changes_nothing(store: None) -> None:
    entities.insert(_note())
    entities.update(Note, "n", lambda n: n.set_fields({"text": "b"}))
    with pytest.raises(Conflict) as info:
        entities.update(Note, "n", lambda n: n.set_fields({"text": "c"}), expected_version=1)
    assert status_of(info.value) == 409
    assert info.value.errors == [{"field": "version", "message": "stale: the stored version is 2"}]
    assert entities.load(Note, "n").text == "b"


def test_replace_of_a_copy_read_before_another_write_is_a_409(store: None) -> None:
    entities.insert(_note())
    first, second = entities.load(Note, "n"), entities.load(Note, "n")
    first.text = "b"
    entities.replace(first)
    second.text = "c"
    with pytest.raises(Conflict):
        entities.replace(second)
    assert json.loads(json.dumps(entities.load(Note, "n").doc()))["text"] == "b"


def test_remove_deletes_the_entity_as_read_or_409s_if_it_moved_on(store: None) -> None:
    entities.insert(_note())
    stale = entities.load(Note, "n")
    entities.update(Note, "n", lambda n: n.set_fields({"text": "b"}))
    with pytest.raises(Conflict):
        entities.remove(stale)
    entities.remove(entities.load(Note, "n"))
    assert dynamo.get(kinds.PROMPT, "n") is None
