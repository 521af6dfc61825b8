"""Archive and unarchive as every soft-archiving kind does them (services.common.lifecycle),
and the shim that reads older representations of "archived"."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from expconsole import context
from expconsole.api.errors import status_of
from expconsole.errors import Invalid
from expconsole.models.gates import GateState, StoredGate
from expconsole.services import entities
from expconsole.services.common import lifecycle
from tests.unit.test_gates_models import STORED


@pytest.fixture
def store(aws: None) -> Iterator[None]:
    token = context.set_caller(context.Caller("key-1", "console"))
    yield
    context.reset(token)


def _gate(gate_id: str) -> StoredGate:
    return StoredGate.read(
        {**STORED, "id": gate_id, **entities.bookkeeping(), "_state": {"launched": True, "archived": False}}
    )


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
    entities.insert(_gate("g"))
    gate = lifecycle.archive(StoredGate, "g", "done", label="Gate")
    state = gate.state
    assert state.archived is True and state.archiveReason == "done"
    assert isinstance(state.archivedTime, int)
    assert state.launched is True  # what else the kind keeps in _state stays
    assert gate.version == 2
    assert entities.load(StoredGate, "g") == gate
    with pytest.raises(Invalid) as info:
        lifecycle.archive(StoredGate, "g", None, label="Gate")
    assert (status_of(info.value), info.value.message) == (400, "Gate 'g' is already archived.")
    assert entities.load(StoredGate, "g").version == 2


def test_unarchive_keeps_the_named_state_and_refuses_an_unarchived_entity(store: None) -> None:
    entities.insert(_gate("g"))
    with pytest.raises(Invalid) as info:
        lifecycle.unarchive(StoredGate, "g", label="Gate")
    assert info.value.message == "Gate 'g' is not archived."
    lifecycle.archive(StoredGate, "g", "why", label="Gate")
    gate = lifecycle.unarchive(StoredGate, "g", label="Gate", keep=("launched",))
    assert gate.doc()["_state"] == {"launched": True, "archived": False}
    assert gate.version == 3


def test_a_change_to_an_archived_entity_is_a_400_naming_it() -> None:
    lifecycle.refuse_if_archived(_gate("p"), "Prompt")
    archived = StoredGate.read({**STORED, "id": "p", "_state": {"archived": True}})
    with pytest.raises(Invalid) as info:
        lifecycle.refuse_if_archived(archived, "Prompt")
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


def test_archived_state_keeps_what_the_state_held_and_unarchived_only_what_is_kept() -> None:
    state = GateState.read({"launched": True, "archived": False, "note": "kept"})
    archived = lifecycle.archived_state(state, "done")
    assert archived.doc() == {
        "launched": True,
        "archived": True,
        "note": "kept",
        "archiveReason": "done",
        "archivedTime": archived.archivedTime,
    }
    assert isinstance(archived.archivedTime, int)
    unarchived = lifecycle.unarchived_state(archived, keep=("launched",))
    assert unarchived.doc() == {"launched": True, "archived": False}
