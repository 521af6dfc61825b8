"""One meaning for a partial update (PATCH) of any kind.

The fields sent change, the others keep their value. A PATCH that sends no field to change
(an empty body, or only the `version` read) changes nothing: no new version, no new
`lastModifiedTime`, no entry in the version history; it answers the entity as stored, after
the same stale-version check as any update (409). The contract's `version` "increases as the
entity is updated", and such a request updates nothing; it is what prompts always did, and
what a client retrying or sending an unchanged form should see.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from expconsole.services import entities
from expconsole.services.entities import Doc

if TYPE_CHECKING:
    from expconsole.models.base import PatchModel

# What a PATCH body may carry besides the fields to change.
NOT_CHANGES = frozenset({"version"})


def changes_of(sent: Mapping[str, Any], also_not: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The fields of a PATCH body that ask for a change (not the version read, nor `also_not`:
    request options such as `dryRun`)."""
    skip = NOT_CHANGES | also_not
    return {k: v for k, v in sent.items() if k not in skip}


def unchanged(
    kind: str, entity_id: str, changes: Mapping[str, Any], expected_version: int | None
) -> Doc | None:
    """The stored entity when a PATCH asks for no change (`changes` empty), else None: the caller
    applies the changes as the next version."""
    if changes:
        return None
    return entities.current(kind, entity_id, expected_version)


def asks_change(body: PatchModel, also_not: frozenset[str] = frozenset()) -> bool:
    """Whether a PATCH body sends a field to change (`changes_of`, on the request model)."""
    return bool(body.model_fields_set - NOT_CHANGES - also_not)
