"""The base of a kind's stored model: one entity as the table holds its `doc`.

A stored model reads every item ever written: keys it does not declare (older fields, internal
state another module writes, such as `_health`) are kept as extras, and writing it back gives
exactly the keys it was read or built with (unset defaults are not written), so a read and a
write change nothing the change did not ask for. Internal fields, stored under keys starting
with `_`, are declared with that key as their alias (pydantic keeps `_` names for private
attributes).
"""

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, PrivateAttr


class StoredModel(BaseModel):
    """An entity's stored document, typed; `read` a stored item, `doc()` to write it."""

    model_config = ConfigDict(
        extra="allow",
        defer_build=True,
        validate_by_name=True,
        validate_by_alias=True,
        validate_assignment=True,
    )

    # The entity's kind (expconsole.kinds), which services.entities stores it under; a kind's
    # stored model sets it, the models of parts of one (a `_state`) leave it empty.
    KIND: ClassVar[str] = ""

    @classmethod
    def read(cls, doc: Mapping[str, Any]) -> Self:
        return cls.model_validate(doc)

    def doc(self) -> dict[str, Any]:
        """The document to store: internal fields under their `_` keys, only the keys set."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def set_sent(self, body: BaseModel, names: AbstractSet[str]) -> None:
        """Set the fields of `names` that a request model sent, each validated as the stored
        field's type from its JSON value (a request's nested model becomes the stored one)."""
        for name in sorted(body.model_fields_set & names):
            setattr(self, name, body.model_dump(mode="json", include={name})[name])

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


def in_order(values: dict[str, Any], order: Sequence[str]) -> dict[str, Any]:
    """`values` with the keys of `order` where they were, then the others as they come: how a dict
    read in that order and changed in place (values replaced, keys popped, keys added) reads."""
    out = {key: values[key] for key in order if key in values}
    out.update(values)
    return out


class KeptOrder(StoredModel):
    """A stored model whose item keeps its keys in the order they were read, for the items whose
    answer is built in their key order: an experiment (services.experiments.present answers its
    public keys as stored, `Experiment.of`) and a pulse load record (`presented`). Their keys
    follow their history (an experiment's key set after the create comes after `version`, one
    popped and set again comes last), so writing one back in the declared order would move
    them, and with them the answer's keys. Keys set since are written after them, in the
    declared order, as `dict.update` and `dict.pop` left them."""

    _read_order: tuple[str, ...] = PrivateAttr(default=())

    @classmethod
    def read(cls, doc: Mapping[str, Any]) -> Self:
        stored = super().read(doc)
        stored._read_order = tuple(doc)
        return stored

    def forget_order(self, keys: Iterable[str]) -> None:
        """Write `keys` after every key read, as if popped from the item and set again."""
        dropped = set(keys)
        self._read_order = tuple(k for k in self._read_order if k not in dropped)

    def unset(self, name: str) -> None:
        """Leave field `name` out of the item, as popping its key would (set again, it comes last)."""
        field = type(self).model_fields[name]
        self.__dict__[name] = field.get_default(call_default_factory=True, validated_data={})
        self.__pydantic_fields_set__.discard(name)
        self.forget_order([field.alias or name])

    def doc(self) -> dict[str, Any]:
        return in_order(super().doc(), self._read_order)
