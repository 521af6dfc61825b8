"""The base of a kind's stored model: one entity as the table holds its `doc`.

A stored model reads every item ever written: keys it does not declare (older fields, internal
state another module writes, such as `_health`) are kept as extras, and writing it back gives
exactly the keys it was read or built with (unset defaults are not written), so a read and a
write change nothing the change did not ask for. Internal fields, stored under keys starting
with `_`, are declared with that key as their alias (pydantic keeps `_` names for private
attributes).
"""

from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict


class StoredModel(BaseModel):
    """An entity's stored document, typed; `read` a stored item, `doc()` to write it."""

    model_config = ConfigDict(
        extra="allow",
        defer_build=True,
        validate_by_name=True,
        validate_by_alias=True,
        validate_assignment=True,
    )

    @classmethod
    def read(cls, doc: Mapping[str, Any]) -> Self:
        return cls.model_validate(doc)

    def doc(self) -> dict[str, Any]:
        """The document to store: internal fields under their `_` keys, only the keys set."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def set_fields(self, values: Mapping[str, Any]) -> None:
        """Set fields from JSON values (a request's changes), each validated as the field's type."""
        for name, value in values.items():
            setattr(self, name, value)


class ArchiveState(StoredModel):
    """The `_state` of a kind with a soft archive, as services.common.lifecycle writes it (an item
    may hold only some of these keys, or others that lifecycle.is_archived reads)."""

    archived: bool = False
    archiveReason: str | None = None
    archivedTime: int | None = None
