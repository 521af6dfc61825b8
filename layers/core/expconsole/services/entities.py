"""What every stored entity shares: ids, creator/modifier bookkeeping, versions, locking.

Internal state that is not part of the resource lives under keys starting with `_` in the
stored document; `public()` strips it.
"""

from __future__ import annotations

import re
import secrets
import string
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from expconsole import config, context, kinds
from expconsole.errors import Conflict, Invalid, NotFound
from expconsole.models.stored import StoredModel
from expconsole.store import dynamo

Doc = dict[str, Any]
Stored = TypeVar("Stored", bound=StoredModel)


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


def load(kind: str, entity_id: str) -> Doc:
    doc = dynamo.get(kind, entity_id)
    if doc is None:
        raise NotFound(f"{kinds.LABEL[kind]} {entity_id!r} not found.")
    return doc


def current(kind: str, entity_id: str, expected_version: int | None = None) -> Doc:
    """The stored entity, after checking it is still at the version the client read (409 if not)."""
    doc = load(kind, entity_id)
    if expected_version is not None and expected_version != int(doc["version"]):
        raise _stale(kind, entity_id, expected_version, int(doc["version"]))
    return doc


def require_exists(kind: str, entity_id: str, field: str) -> None:
    """A reference must name an existing entity: else a 400 naming the field."""
    if dynamo.get(kind, entity_id) is None:
        raise Invalid.field(field, f"{kinds.LABEL[kind].lower()} {entity_id!r} does not exist")


def insert(kind: str, entity_id: str, doc: Doc) -> Doc:
    try:
        dynamo.create(kind, entity_id, doc)
    except dynamo.StoreConflict:
        raise Conflict(f"{kinds.LABEL[kind]} with id {entity_id!r} already exists.") from None
    return doc


def update(
    kind: str, entity_id: str, change: Callable[[Doc], None], expected_version: int | None = None
) -> Doc:
    """Read, apply `change` to a copy, and store it as the next version, or 409 if it moved on.

    `expected_version` is the version the client based its change on, when it says so.
    """
    current = load(kind, entity_id)
    version = int(current["version"])
    if expected_version is not None and expected_version != version:
        raise _stale(kind, entity_id, expected_version, version)
    doc = {**current}
    change(doc)
    doc["version"] = version + 1
    doc["lastModifiedTime"] = max(now_ms(), int(current["lastModifiedTime"]))
    doc["lastModifierID"] = context.current().key_id
    doc["lastModifierName"] = config.CREATOR_NAME
    doc["lastModifierEmail"] = None
    try:
        dynamo.replace(kind, entity_id, doc, expected_version=version)
    except dynamo.StoreConflict:
        raise Conflict(
            f"{kinds.LABEL[kind]} {entity_id!r} was changed by another request while this one was "
            f"applied (version {version} is no longer current); read it again and retry."
        ) from None
    return doc


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


def remove(kind: str, entity_id: str, doc: Doc) -> None:
    try:
        dynamo.delete(kind, entity_id, expected_version=int(doc["version"]))
    except dynamo.StoreConflict:
        raise Conflict(
            f"{kinds.LABEL[kind]} {entity_id!r} was changed by another request; read it again and retry."
        ) from None


def _stale(kind: str, entity_id: str, sent: int, stored: int) -> Conflict:
    return Conflict(
        f"{kinds.LABEL[kind]} {entity_id!r} is at version {stored}, not {sent}: it was changed since "
        "you read it; read it again and retry.",
        [{"field": "version", "message": f"stale: the stored version is {stored}"}],
    )
