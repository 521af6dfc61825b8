"""Archive and unarchive, as every kind with a soft archive does them.

Stored representation: `_state: {archived: true, archiveReason, archivedTime}` while archived,
`_state: {archived: false}` (plus what a kind keeps across, such as a gate's launch) after.
Older items recorded it other ways and still read through `is_archived`: an experiment's
stored `status: "archived"` (its status is a state machine, services.experiments), and a
metric's `_state.scheduledArchiveTime` once passed (archive after a grace, services.metrics).

While archived an entity answers reads and refuses changes (400) until unarchived; archiving
an archived one, or unarchiving one that is not, is a 400.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from expconsole.errors import Invalid
from expconsole.models.stored import StoredModel
from expconsole.services import entities


def is_archived(doc: Mapping[str, Any], now: int | None = None) -> bool:
    """Archived, whichever way the item records it (see the module's docstring)."""
    state = doc.get("_state") or {}
    if state.get("archived") or doc.get("status") == "archived":
        return True
    scheduled = state.get("scheduledArchiveTime")
    return scheduled is not None and scheduled <= (entities.now_ms() if now is None else now)


# --- on a kind's stored model --------------------------------------------------------------------

State = TypeVar("State", bound=StoredModel)


def entity_is_archived(entity: StoredModel, now: int | None = None) -> bool:
    """`is_archived` of a stored model: its `_state` (`state`), and an older item's stored
    `status` (a key the model keeps as an extra unless it declares one)."""
    state = getattr(entity, "state", None)
    return is_archived(
        {
            "status": getattr(entity, "status", None),
            "_state": state.model_dump() if isinstance(state, StoredModel) else {},
        },
        now,
    )


def refuse_if_archived(
    entity: StoredModel, label: str, advice: str = "unarchive it before changing it"
) -> None:
    """A change to an archived entity is a 400 naming it."""
    if entity_is_archived(entity):
        raise Invalid(f"{label} {_id(entity)!r} is archived: {advice}.")


def refuse_archiving_twice(entity: StoredModel, label: str) -> None:
    if entity_is_archived(entity):
        raise Invalid(f"{label} {_id(entity)!r} is already archived.")


def refuse_unless_archived(entity: StoredModel, label: str) -> None:
    if not entity_is_archived(entity):
        raise Invalid(f"{label} {_id(entity)!r} is not archived.")


def archived_state(state: State, reason: str | None) -> State:
    """The `_state` of an entity archived now: what it held, and the archive."""
    return state.model_copy(
        update={"archived": True, "archiveReason": reason, "archivedTime": entities.now_ms()}
    )


def unarchived_state(state: State, keep: Iterable[str] = ()) -> State:
    """The `_state` of an entity unarchived: only `keep` (a gate's `launched`) stays, and
    `archived: false`."""
    kept = {key: getattr(state, key, False) for key in keep}
    return type(state).model_validate({**kept, "archived": False})


def _id(entity: StoredModel) -> str:
    return str(getattr(entity, entities.ID))


Stored = TypeVar("Stored", bound=StoredModel)

# The field of a kind's stored model holding its `_state`.
STATE = "state"


def archive(model: type[Stored], entity_id: str, reason: str | None, *, label: str) -> Stored:
    """Archive the entity, of a kind whose stored model holds its archive in `state` and whose
    archive checks nothing else (a kind that does reads, checks and `entities.replace`s it
    itself, with `refuse_archiving_twice` and `archived_state`)."""
    entity = entities.load(model, entity_id)
    refuse_archiving_twice(entity, label)
    setattr(entity, STATE, archived_state(getattr(entity, STATE), reason))
    return entities.replace(entity)


def unarchive(model: type[Stored], entity_id: str, *, label: str, keep: Iterable[str] = ()) -> Stored:
    """Unarchive the entity, as `archive`."""
    entity = entities.load(model, entity_id)
    refuse_unless_archived(entity, label)
    setattr(entity, STATE, unarchived_state(getattr(entity, STATE), keep))
    return entities.replace(entity)
