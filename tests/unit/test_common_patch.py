"""One meaning for PATCH (services.common.patch): an empty one changes nothing, not even the version."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from expconsole import context, kinds
from expconsole.api.errors import status_of
from expconsole.errors import Conflict
from expconsole.services import entities
from expconsole.services.common import patch


@pytest.fixture
def stored(aws: None) -> Iterator[dict[str, object]]:
    token = context.set_caller(context.Caller("key-1", "console"))
    doc = entities.insert(kinds.PROMPT, "p", {"id": "p", "description": "d", **entities.bookkeeping()})
    entities.update(kinds.PROMPT, "p", lambda d: d.update(description="e"))  # now at version 2
    yield entities.load(kinds.PROMPT, "p") | {"_inserted": doc}
    context.reset(token)


def test_only_fields_to_change_count_as_changes() -> None:
    assert patch.changes_of({"version": 3}) == {}
    assert patch.changes_of({"version": 3, "dryRun": True, "name": "n"}, frozenset({"dryRun", "name"})) == {}
    assert patch.changes_of({"version": 3, "description": "x"}) == {"description": "x"}


def test_an_empty_patch_answers_the_stored_entity_without_a_new_version(stored: dict[str, object]) -> None:
    doc = patch.unchanged(kinds.PROMPT, "p", {}, None)
    assert doc is not None and doc["version"] == 2 and doc["description"] == "e"
    assert patch.unchanged(kinds.PROMPT, "p", {}, 2) == doc
    assert entities.load(kinds.PROMPT, "p") == doc


def test_an_empty_patch_based_on_a_stale_version_is_a_409(stored: dict[str, object]) -> None:
    with pytest.raises(Conflict) as info:
        patch.unchanged(kinds.PROMPT, "p", {}, 1)
    assert status_of(info.value) == 409
    assert info.value.errors == [{"field": "version", "message": "stale: the stored version is 2"}]


def test_a_patch_with_changes_is_left_to_the_kind(stored: dict[str, object]) -> None:
    assert patch.unchanged(kinds.PROMPT, "p", {"description": "x"}, None) is None
