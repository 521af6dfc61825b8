"""Base classes and constrained types shared by every resource.

Every model defers its build (`defer_build=True`): pydantic builds a model's validator on its first
use instead of when the class is created, so a function's cold start builds only what its first
request validates, not every model its routes name (tests/unit/test_cold_start_models.py).

The model modules do without `from __future__ import annotations`: with it every field annotation
is a string that pydantic compiles and evaluates when the class is created, a large share of
creating a model class (docs/performance.md, 'Cold start'), paid at every cold start for every
model a function imports.

Every request body declares examples (`json_schema_extra={"examples": [...]}`, plain dicts: nothing
is built at import): bodies a user can send as is, which openapi.json gives /docs' "Try it out".
They make one story, each naming what an earlier one created (an experiment names the gate
`new_checkout`, the layer `checkout` and the metric `revenue::sum`); an id in an example is the
one its name implies (lower case, spaces as underscores). tests/functional/test_openapi_examples.py
sends them all, in that order, and expects success; only a rule's `id`, which the service draws at
random, is replaced there by the id of the stored rule of the same name.
"""

import math
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    RootModel,
    StringConstraints,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)
from pydantic_core import PydanticCustomError

# The base of root models, which annotate `root` themselves. To mypy it is `RootModel[Any]` (what a
# bare RootModel means, spelled out for strict mode); at run time the bare class, because
# `RootModel[Any]` would be a class of its own that pydantic builds at import (defer_build above).
if TYPE_CHECKING:
    AnyRootModel = RootModel[Any]
else:
    AnyRootModel = RootModel


def _number(value: object) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise PydanticCustomError("number_type", "must be a number")
    return value


# A JSON number, kept as sent: integers stay integers, fractions stay fractions; "5" is refused.
Number = Annotated[int | float, PlainValidator(_number), WithJsonSchema({"type": "number"})]


class RequestModel(BaseModel):
    """A request body: strict types (no "5" for 5) and unknown fields rejected by name."""

    model_config = ConfigDict(strict=True, extra="forbid", defer_build=True)


class ResponseModel(BaseModel):
    """A response shape, for OpenAPI and contract tests; tolerant of extra fields."""

    model_config = ConfigDict(extra="allow", defer_build=True)


def _text_bool(value: object) -> object:
    if isinstance(value, str):
        lowered = value.lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        raise ValueError("must be `true` or `false`")
    return value


# Query-string booleans: exactly `true` or `false` (pydantic's lax set would take `yes`, `1`, ...).
QueryBool = Annotated[bool, BeforeValidator(_text_bool)]


def _one_or_many(value: object) -> object:
    return [value] if isinstance(value, str) else value


# Fields the peer accepts as one string or a list of strings (e.g. `targetApps`): stored as a list.
StrList = Annotated[list[str], BeforeValidator(_one_or_many, json_schema_input_type=str | list[str])]

EntityName = Annotated[
    str,
    StringConstraints(min_length=3, max_length=100, pattern=r"^[a-zA-Z0-9_\-. ]*$"),
    Field(description="3 to 100 characters: letters, digits, underscore, hyphen, period, space."),
]
Description = Annotated[str, Field(max_length=1000, description="At most 1000 characters.")]
Tag = Annotated[str, StringConstraints(min_length=1, max_length=100)]


class PatchModel(RequestModel):
    """A partial update: fields left out keep their value; `null` only where a field allows it."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*")
    @classmethod
    def _no_null_for_required_values(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None and info.field_name not in cls.NULLABLE:
            raise PydanticCustomError(
                "null_not_allowed", "cannot be null; leave the field out to keep its value"
            )
        return value

    def changes(self) -> dict[str, Any]:
        """The fields the client sent, as plain JSON values."""
        return self.model_dump(mode="json", exclude_unset=True)
