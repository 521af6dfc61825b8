"""Archive and unarchive as every soft-archiving kind does them (services.common.lifecycle),
and the shim that reads older representations of "archived"."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from expconsole import context, kinds
from expconsole.api.errors import status_of
from expconsole.errors import Conflict, Invalid
from expconsole.models.gates import GateState, StoredGate
from expconsole.services import entities
from expconsole.services.common import lifecycle
from tests.unit.test_gates_models import STORED


@pytest.fixture
def store(aws: None) -> Iterator[None]:
    token = context.set_caller(context.Caller("key-1", "console"))
    yield
    context.reset(token)


def _gate(gate_id: str) -> dict[str, object]:
    return {"id": gate_id, **entities.bookkeeping(), "_state": {"launched": True, "archived": False}}


@pytest.mark.parametrize(
    ("doc", "archived"),
    [
        ({"_state": {"archived": True}}, True),
        ({"_state": {"archived": False}}, False),
        ({}, False),
        # An experiment: its status is the archive.
        ({"status": "archived", "_state": {"archivedFrom": "setup"}}, True),
        ({"status": "setup"}, False),
        # A metric: archived once its scheduled time has passed, not before.
        ({"_state": {"scheduledArchiveTime": 1_000}}, True),
        ({"_state": {"scheduledArchiveTime": 3_000}}, False),
        ({"_state": {"scheduledArchiveTime": None}}, False),
    ],
)
def test_every_stored_representation_reads_as_archived_or_not(doc: dict[str, object], archived: bool) -> None:
    assert lifecycle.is_archived(doc, now=2_000) is archived


def test_archive_stores_one_representation_and_refuses_twice(store: None) -> None:
    entities.insert(kinds.GATE, "g", _gate("g"))
    doc = lifecycle.archive(kinds.GATE, "g", "done", label="Gate")
    state = doc["_state"]
    assert state["archived"] is True and state["archiveReason"] == "done"
    assert isinstance(state["archivedTime"], int)
    assert state["launched"] is True  # what else the kind keeps in _state stays
    assert doc["version"] == 2
    with pytest.raises(Invalid) as info:
        lifecycle.archive(kinds.GATE, "g", None, label="Gate")
    assert (status_of(info.value), info.value.message) == (400, "Gate 'g' is already archived.")
    assert entities.load(kinds.GATE, "g")["version"] == 2


def test_a_refusing_check_leaves_the_entity_as_it_was(store: None) -> None:
    before = entities.insert(kinds.GATE, "g", _gate("g"))

    def in_use(doc: dict[str, object]) -> None:
        raise Conflict("Gate 'g' is still used by experiment 'e'.")

    with pytest.raises(Conflict):
        lifecycle.archive(kinds.GATE, "g", None, label="Gate", check=in_use)
    assert entities.load(kinds.GATE, "g") == before


def test_unarchive_keeps_the_named_state_and_refuses_an_unarchived_entity(store: None) -> None:
    entities.insert(kinds.GATE, "g", _gate("g"))
    with pytest.raises(Invalid) as info:
        lifecycle.unarchive(kinds.GATE, "g", label="Gate")
    assert info.value.message == "Gate 'g' is not archived."
    lifecycle.archive(kinds.GATE, "g", "why", label="Gate")
    doc = lifecycle.unarchive(kinds.GATE, "g", label="Gate", keep=("launched",))
    assert doc["_state"] == {"launched": True, "archived": False}
    assert doc["version"] == 3


def test_a_change_to_an_archived_entity_is_a_400_naming_it() -> None:
    lifecycle.refuse_if_archived({"id": "p", "_state": {"archived": False}}, "Prompt")
    with pytest.raises(Invalid) as info:
        lifecycle.refuse_if_archived({"id": "p", "_state": {"archived": True}}, "Prompt")
    assert info.value.message == "Prompt 'p' is archived: unarchive it before changing it."


@pytest.mark.parametrize(
    ("doc", "archived"),
    [
        ({"_state": {"archived": True}}, True),
        ({"_state": {"archived": False}}, False),
        ({}, False),
        ({"status": "archived"}, True),  # an older item's stored status
        ({"_state": {"scheduledArchiveTime": 1_000}}, True),
        ({"_state": {"scheduledArchiveTime": 3_000}}, False),
    ],
)
def test_a_stored_model_reads_archived_as_its_document_does(doc: dict[str, object], archived: bool) -> None:
    gate = StoredGate.read({**STORED, "_state": {}, **doc})
    assert lifecycle.entity_is_archived(gate, now=2_000) is archived


def test_archived_and_unarchived_states_are_what_the_document_functions_store() -> None:
    state = GateState.read({"launched": True, "archived": False, "note": "kept"})
    archived = lifecycle.archived_state(state, "done")
    doc: dict[str, object] = {"_state": state.doc()}
    lifecycle.mark_archived(doc, "done")
    assert archived.doc() == {**doc["_state"], "archivedTime": archived.archivedTime}  # type: ignore[dict-item]
    unarchived = lifecycle.unarchived_state(archived, keep=("launched",))
    lifecycle.mark_unarchived(doc, keep=("launched",))
    assert unarchived.doc() == doc["_state"] == {"launched": True, "archived": False}
