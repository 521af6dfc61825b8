"""What every stored entity shares: ids, creator/modifier bookkeeping, versions, locking.

A kind reads and writes its stored model (models/stored.py): `load(StoredGate, id)` and
`current(StoredGate, id, expected_version)` give the model, `insert(gate)` stores version 1,
`update(StoredGate, id, change, expected_version)` (or `replace` of a model read and changed)
the next version with the modifier set, 409 when the stored one moved on; `remove(gate)`
deletes it as read. The same functions given a kind's name work on documents, for the kinds
still written as such.

Internal state that is not part of the resource lives under keys starting with `_` in the
stored document; `public()` strips it.
"""

from __future__ import annotations

import re
import secrets
import string
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, overload

from expconsole import config, context, kinds
from expconsole.errors import Conflict, Invalid, NotFound
from expconsole.models.stored import StoredModel
from expconsole.store import dynamo

if TYPE_CHECKING:
    from expconsole.models.common import Owner, OwnerIn

Doc = dict[str, Any]
Stored = TypeVar("Stored", bound=StoredModel)

# Fields every stored model has (the kinds' `<Kind>Fields`), read by name here.
ID, VERSION, MODIFIED = "id", "version", "lastModifiedTime"


class Presenter(Protocol):
    """How a service shows an entity of its kind to another service listing them (its `present`)."""

    def __call__(self, doc: Doc, *, now: int | None = ...) -> Doc: ...


_ALPHABET = string.ascii_letters + string.digits


def now_ms() -> int:
    return int(time.time() * 1000)


def new_id(length: int = 22) -> str:
    """A random id for sub-objects such as rules (base62, ~131 bits)."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def id_from_name(name: str) -> str:
    """The id a name implies when none is given: lower case, spaces to underscores."""
    return re.sub(r"\s+", "_", name.strip()).lower()


def permalink(kind: str, entity_id: str) -> str:
    return f"{context.current().base_url}{config.CONSOLE_PREFIX}/{kinds.PATH[kind]}/{entity_id}"


def owner_for(given: dict[str, Any] | None) -> dict[str, Any]:
    """The owner a create stores: the one given, else the calling key as `SDK_KEY`."""
    if given:
        return {
            "ownerID": given["ownerID"],
            "ownerType": given.get("ownerType", "USER"),
            "ownerName": given.get("ownerName", ""),
            "ownerEmail": given.get("ownerEmail", ""),
        }
    return {
        "ownerID": context.current().key_id,
        "ownerType": config.OWNER_TYPE,
        "ownerName": config.CREATOR_NAME,
        "ownerEmail": "",
    }


def owner(given: OwnerIn | None) -> Owner:
    """`owner_for`, from and to the models."""
    from expconsole.models.common import Owner

    return Owner.model_validate(owner_for(given.model_dump(mode="json") if given else None))


def bookkeeping(creator_id: str | None = None, creator_email: str | None = None) -> Doc:
    """Creator and modifier fields of a new entity, made through the console API."""
    now = now_ms()
    key_id = context.current().key_id
    return {
        "creatorID": creator_id or key_id,
        "creatorName": config.CREATOR_NAME,
        "creatorEmail": creator_email,
        "createdTime": now,
        "lastModifierID": key_id,
        "lastModifierName": config.CREATOR_NAME,
        "lastModifierEmail": None,
        "lastModifiedTime": now,
        "version": 1,
    }


def public(doc: Doc) -> Doc:
    return {k: v for k, v in doc.items() if not k.startswith("_")}


@overload
def load(kind: type[Stored], entity_id: str) -> Stored: ...
@overload
def load(kind: str, entity_id: str) -> Doc: ...
def load(kind: type[Stored] | str, entity_id: str) -> Stored | Doc:
    """The stored entity, as its kind's stored model (or, for kinds not yet typed, its document);
    404 if there is none."""
    doc = dynamo.get(_kind(kind), entity_id)
    if doc is None:
        raise NotFound(f"{kinds.LABEL[_kind(kind)]} {entity_id!r} not found.")
    return doc if isinstance(kind, str) else kind.read(doc)


@overload
def current(kind: type[Stored], entity_id: str, expected_version: int | None = None) -> Stored: ...
@overload
def current(kind: str, entity_id: str, expected_version: int | None = None) -> Doc: ...
def current(kind: type[Stored] | str, entity_id: str, expected_version: int | None = None) -> Stored | Doc:
    """The stored entity, after checking it is still at the version the client read (409 if not)."""
    entity = load(kind, entity_id)
    stored = int(entity["version"] if isinstance(entity, dict) else getattr(entity, VERSION))
    if expected_version is not None and expected_version != stored:
        raise _stale(_kind(kind), entity_id, expected_version, stored)
    return entity


def require_exists(kind: str, entity_id: str, field: str) -> None:
    """A reference must name an existing entity: else a 400 naming the field."""
    if dynamo.get(kind, entity_id) is None:
        raise Invalid.field(field, f"{kinds.LABEL[kind].lower()} {entity_id!r} does not exist")


@overload
def insert(entity: Stored, /) -> Stored: ...
@overload
def insert(kind: str, entity_id: str, doc: Doc, /) -> Doc: ...
def insert(what: Stored | str, entity_id: str = "", doc: Doc | None = None, /) -> Stored | Doc:
    """Store version 1 of a new entity (a stored model, or a kind's id and document); 409 if the
    id is taken."""
    if isinstance(what, str):
        kind, written = what, doc
    else:
        kind, entity_id, written = type(what).KIND, getattr(what, ID), what.doc()
    assert written is not None
    try:
        dynamo.create(kind, entity_id, written)
    except dynamo.StoreConflict:
        raise Conflict(f"{kinds.LABEL[kind]} with id {entity_id!r} already exists.") from None
    return written if isinstance(what, str) else what


@overload
def update(
    kind: type[Stored], entity_id: str, change: Callable[[Stored], None], expected_version: int | None = None
) -> Stored: ...
@overload
def update(
    kind: str, entity_id: str, change: Callable[[Doc], None], expected_version: int | None = None
) -> Doc: ...
def update(
    kind: type[Stored] | str,
    entity_id: str,
    change: Callable[[Stored], None] | Callable[[Doc], None],
    expected_version: int | None = None,
) -> Stored | Doc:
    """Read, apply `change`, and store it as the next version, or 409 if it moved on.

    `expected_version` is the version the client based its change on, when it says so.
    """
    if not isinstance(kind, str):
        entity = current(kind, entity_id, expected_version)
        cast(Callable[[Stored], None], change)(entity)
        return replace(entity)
    stored = current(kind, entity_id, expected_version)
    doc = {**stored}
    cast(Callable[[Doc], None], change)(doc)
    doc.update(_next_version(int(stored["version"]), int(stored["lastModifiedTime"])))
    _write(kind, entity_id, doc, int(stored["version"]))
    return doc


def replace(entity: Stored) -> Stored:
    """Store `entity`, read with `load` or `current` and changed since, as its next version: the
    bookkeeping set here, and 409 if the stored one moved on since it was read."""
    read_version = stamp(entity)
    _write(type(entity).KIND, getattr(entity, ID), entity.doc(), read_version)
    return entity


def stamp(entity: StoredModel) -> int:
    """Make `entity` its next version, modified now by the calling key; the version it was read
    at (what its write is conditional on)."""
    read_version = int(getattr(entity, VERSION))
    entity.set_fields(_next_version(read_version, int(getattr(entity, MODIFIED))))
    return read_version


def _next_version(version: int, last_modified: int) -> Doc:
    return {
        "version": version + 1,
        MODIFIED: max(now_ms(), last_modified),
        "lastModifierID": context.current().key_id,
        "lastModifierName": config.CREATOR_NAME,
        "lastModifierEmail": None,
    }


def _write(kind: str, entity_id: str, doc: Doc, read_version: int) -> None:
    try:
        dynamo.replace(kind, entity_id, doc, expected_version=read_version)
    except dynamo.StoreConflict:
        raise Conflict(
            f"{kinds.LABEL[kind]} {entity_id!r} was changed by another request while this one was "
            f"applied (version {read_version} is no longer current); read it again and retry."
        ) from None


def update_stored(
    kind: str,
    entity_id: str,
    model: type[Stored],
    change: Callable[[Stored], None],
    expected_version: int | None = None,
) -> Doc:
    """`update` through the kind's stored model (`through`)."""
    return update(kind, entity_id, through(model, change), expected_version)


def through(model: type[Stored], change: Callable[[Stored], None]) -> Callable[[Doc], None]:
    """A change of a stored document made through the kind's stored model: `change` edits the
    typed entity, and the document becomes what the model writes (every key it was read with,
    plus those the change set)."""

    def apply(doc: Doc) -> None:
        entity = model.read(doc)
        change(entity)
        doc.clear()
        doc.update(entity.doc())

    return apply


@overload
def remove(entity: StoredModel, /) -> None: ...
@overload
def remove(kind: str, entity_id: str, doc: Doc, /) -> None: ...
def remove(what: StoredModel | str, entity_id: str = "", doc: Doc | None = None, /) -> None:
    """Delete the entity as read (a stored model, or a kind's id and document); 409 if it changed
    since."""
    if isinstance(what, str):
        assert doc is not None
        kind, version = what, int(doc["version"])
    else:
        kind, entity_id, version = type(what).KIND, getattr(what, ID), int(getattr(what, VERSION))
    try:
        dynamo.delete(kind, entity_id, expected_version=version)
    except dynamo.StoreConflict:
        raise Conflict(
            f"{kinds.LABEL[kind]} {entity_id!r} was changed by another request; read it again and retry."
        ) from None


def _kind(kind: type[StoredModel] | str) -> str:
    return kind if isinstance(kind, str) else kind.KIND


def _stale(kind: str, entity_id: str, sent: int, stored: int) -> Conflict:
    return Conflict(
        f"{kinds.LABEL[kind]} {entity_id!r} is at version {stored}, not {sent}: it was changed since "
        "you read it; read it again and retry.",
        [{"field": "version", "message": f"stale: the stored version is {stored}"}],
    )
