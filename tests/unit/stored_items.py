"""What the stored-model tests of every kind share: the bookkeeping keys of a stored item (in the
order every kind stores them) and the item as the store writes it."""

import json
from typing import Any

from expconsole.models.stored import ArchiveState, StoredModel
from expconsole.services.common import lifecycle

CREATED_AND_MODIFIED: dict[str, Any] = {
    "creatorID": "k1",
    "creatorName": "CONSOLE API",
    "creatorEmail": None,
    "createdTime": 1_700_000_000_000,
    "lastModifierID": "k1",
    "lastModifierName": "CONSOLE API",
    "lastModifierEmail": None,
    "lastModifiedTime": 1_700_000_001_000,
}


def written(doc: dict[str, Any]) -> str:
    """The item as the store writes it (key order included)."""
    return json.dumps(doc, separators=(",", ":"))


def assert_written_back(model: type[StoredModel], older: dict[str, Any]) -> None:
    """An item of an older shape reads, and writes back byte for byte, archived or not as it was."""
    doc = model.read(older).doc()
    assert written(doc) == written(older)
    assert lifecycle.is_archived(doc, now=10) == lifecycle.is_archived(older, now=10)


def assert_state_optional(model: type[StoredModel], stored: dict[str, Any]) -> None:
    """An item without `_state` reads as not archived, and writing it back adds no `_state`."""
    entity = model.read({k: v for k, v in stored.items() if k != "_state"})
    assert entity.state == ArchiveState()  # type: ignore[attr-defined]
    assert "_state" not in entity.doc()
