"""JSON values given as objects or as JSON5 text, and the JSON Schema that constrains them.

Dynamic configs carry each value twice: as a JSON object (`defaultValue`, `returnValue`) and
as JSON5 text (`defaultValueJson5`, `returnValueJson5`), and their schema as JSON text
(`schema`) and JSON5 text (`schemaJson5`). These helpers parse, check and compare them; every
error is a 400 naming the field it is about (`rules[1].returnValue.timeout`).

Rules:

- JSON5 is parsed by the `json5` library (the JSON5 grammar: comments, trailing commas,
  unquoted keys, single-quoted and multi-line strings, hexadecimal numbers, leading or trailing
  decimal points, an explicit `+`). The text is kept as sent; only its value is checked.
- A value must be representable in JSON: `Infinity`, `-Infinity` and `NaN` (legal JSON5, and
  taken by Python's JSON parser too) are refused, and so is a number too large for a double
  (`1e400`). A JSON5 object with a key twice is refused (its value would depend on the parser).
- Objects and arrays nest at most `MAX_DEPTH` levels (the value itself is level 1).
- Two values are the same when they are equal in JSON's data model: numbers by value (`1` and
  `1.0`, `0x10` and `16` are the same), booleans never equal numbers, key order is irrelevant.
- Text generated from an object is `json.dumps(value, indent=2)`: JSON is JSON5.
- `schema` is JSON text (strict), `schemaJson5` JSON5 text; both denote one JSON Schema, an
  object or a boolean. Its dialect is taken from `$schema` (drafts 3, 4, 6, 7, 2019-09 and
  2020-12); without `$schema` it is 2020-12. An unknown `$schema`, an invalid schema or a
  `$ref` that cannot be resolved (remote references are never fetched) is a 400. `format` is
  an annotation, as the 2020-12 specification has it, not an assertion.

`json5` and `jsonschema` are imported inside the functions that need them: a function's cold
start pays for them only when a request carries JSON5 text or a schema.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from expconsole.errors import Invalid

MAX_DEPTH = 32
MAX_TEXT_CHARS = 100_000  # one JSON5 (or schema) text
MAX_ERRORS = 20  # schema violations reported per request
MAX_MESSAGE_CHARS = 300

# `$schema` URIs (scheme and trailing `#` aside) and the jsonschema validator for each.
_DIALECTS = {
    "json-schema.org/draft-03/schema": "Draft3Validator",
    "json-schema.org/draft-04/schema": "Draft4Validator",
    "json-schema.org/draft-06/schema": "Draft6Validator",
    "json-schema.org/draft-07/schema": "Draft7Validator",
    "json-schema.org/draft/2019-09/schema": "Draft201909Validator",
    "json-schema.org/draft/2020-12/schema": "Draft202012Validator",
}
NOT_JSON = (
    "is not representable in JSON: numbers must be finite "
    "(NaN, Infinity and numbers beyond ±1.8e308 are refused)"
)
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_JSON5_POSITION = re.compile(r"^<string>:(\d+) (.*) at column (\d+)$")


# --- paths -------------------------------------------------------------------------------------


def join_path(field: str, parts: Iterable[str | int]) -> str:
    """`rules[1].returnValue` + `["timeout", 0]` → `rules[1].returnValue.timeout[0]`.

    Keys that are not identifiers are written as JSON strings in brackets (`a["x y"]`).
    """
    out = field
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


def _shorten(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 1] + "…"


# --- values ------------------------------------------------------------------------------------


def nesting_depth(text: str) -> int:
    """How deeply `{` and `[` nest in JSON or JSON5 text (outside strings and comments).

    Checked before parsing, so that a deeply nested text is refused without being parsed.
    """
    depth = deepest = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            i += 1
            while i < n and text[i] != ch:
                i += 2 if text[i] == "\\" else 1
        elif ch == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif ch == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 1
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
        i += 1
    return deepest


class _Invalid(Exception):
    def __init__(self, path: list[str | int], message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def check_value(value: Any, field: str) -> None:
    """A JSON value: finite numbers only, at most MAX_DEPTH levels of objects and arrays.

    The 400 names the field where the problem is (`defaultValue.limits[2]`).
    """
    try:
        _check(value, [], 1)
    except _Invalid as exc:
        raise Invalid.field(join_path(field, exc.path), exc.message) from None


def _check_parsed(value: Any, text_field: str) -> None:
    """As check_value, for a value parsed from text: the 400 names the text field."""
    try:
        _check(value, [], 1)
    except _Invalid as exc:
        at = join_path("", exc.path)
        raise Invalid.field(text_field, f"{exc.message}{f' (at {at})' if at else ''}") from None


def _check(value: Any, path: list[str | int], depth: int) -> None:
    if isinstance(value, dict | list):
        if depth > MAX_DEPTH:
            raise _Invalid(path, f"nests more than {MAX_DEPTH} levels of objects and arrays")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            _check(item, [*path, key], depth + 1)
    elif isinstance(value, float) and not math.isfinite(value):
        shown = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        raise _Invalid(path, f"{shown} {NOT_JSON}")


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} {NOT_JSON}")


def _position(message: str) -> str:
    found = _JSON5_POSITION.match(message)
    if found:
        line, what, column = found.groups()
        return f"line {line}, column {column}: {what[:1].lower()}{what[1:]}"
    return message


def _raise_recursion_limit() -> None:
    """json5's parser recurses ~25 frames per nesting level; MAX_DEPTH levels must fit."""
    import sys

    needed = 2000 + 30 * MAX_DEPTH
    if sys.getrecursionlimit() < needed:
        sys.setrecursionlimit(needed)


def parse_json5(text: str, field: str) -> Any:
    """The value of JSON5 text; a 400 naming `field` when it is not JSON5 or not JSON-representable."""
    if nesting_depth(text) > MAX_DEPTH:
        raise Invalid.field(field, f"nests more than {MAX_DEPTH} levels of objects and arrays")
    import json5

    _raise_recursion_limit()
    try:
        value = json5.loads(text, allow_duplicate_keys=False, parse_constant=_refuse_constant)
    except RecursionError:
        raise Invalid.field(field, "nests too deeply to parse") from None
    except ValueError as exc:
        raise Invalid.field(field, f"is not valid JSON5: {_position(str(exc))}") from None
    _check_parsed(value, field)
    return value


def _pairs_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def parse_json(text: str, field: str) -> Any:
    """The value of strict JSON text (no comments, no NaN/Infinity, no duplicate keys)."""
    if nesting_depth(text) > MAX_DEPTH:
        raise Invalid.field(field, f"nests more than {MAX_DEPTH} levels of objects and arrays")
    try:
        value = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_pairs_without_duplicates)
    except json.JSONDecodeError as exc:
        raise Invalid.field(
            field, f"is not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise Invalid.field(field, f"is not valid JSON: {exc}") from None
    _check_parsed(value, field)
    return value


def to_json5(value: Any) -> str:
    """JSON5 text for a value given as an object: indented JSON (JSON is JSON5)."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def to_json(value: Any) -> str:
    """Compact JSON text."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if value is None:
        return "null"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def first_difference(a: Any, b: Any, path: tuple[str | int, ...] = ()) -> tuple[str | int, ...] | None:
    """Where two JSON values first differ (JSON's data model), or None when they are the same."""
    kind = _kind(a)
    if kind != _kind(b):
        return path
    if kind == "object":
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return (*path, key)
            found = first_difference(a[key], b[key], (*path, key))
            if found is not None:
                return found
        return None
    if kind == "array":
        for index, (x, y) in enumerate(zip(a, b, strict=False)):
            found = first_difference(x, y, (*path, index))
            if found is not None:
                return found
        return None if len(a) == len(b) else (*path, min(len(a), len(b)))
    return None if a == b else path


def same_value(a: Any, b: Any) -> bool:
    return first_difference(a, b) is None


def resolve_object(
    value: dict[str, Any] | None,
    text: str | None,
    field: str,
    text_field: str,
) -> tuple[dict[str, Any], str] | None:
    """An object value sent as an object, as JSON5 text, or both: `(value, JSON5 text)`.

    None when neither was sent. The JSON5 text is kept as sent; when only the object was
    sent it is generated. Both sent must denote the same value.
    """
    if value is None and text is None:
        return None
    if value is not None:
        check_value(value, field)
    if text is None:
        assert value is not None
        return value, to_json5(value)
    parsed = parse_json5(text, text_field)
    if not isinstance(parsed, dict):
        raise Invalid.field(text_field, f"must denote a JSON object, not {_article(_kind(parsed))}")
    if value is not None:
        where = first_difference(value, parsed)
        if where is not None:
            at = join_path(field, where)
            raise Invalid.field(
                text_field,
                f"does not denote the same value as {field} (they differ at {at}); "
                "send one of them, or both with the same value",
            )
        return value, text
    return parsed, text


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


# --- JSON Schema ---------------------------------------------------------------------------------


def resolve_schema(schema: str | None, schema_json5: str | None) -> tuple[Any, str, str] | None:
    """The schema sent as `schema` (JSON) and/or `schemaJson5`: `(schema, JSON text, JSON5 text)`.

    None when neither was sent. The schema is checked against its dialect's meta-schema.
    """
    if schema is None and schema_json5 is None:
        return None
    parsed = parse_json(schema, "schema") if schema is not None else None
    parsed5 = parse_json5(schema_json5, "schemaJson5") if schema_json5 is not None else None
    if schema is not None and schema_json5 is not None:
        where = first_difference(parsed, parsed5)
        if where is not None:
            raise Invalid.field(
                "schemaJson5",
                f"does not denote the same schema as schema (they differ at {join_path('schema', where)})",
            )
    value = parsed if schema is not None else parsed5
    text_field = "schema" if schema is not None else "schemaJson5"
    compile_schema(value, text_field)
    json5_text = schema_json5 if schema_json5 is not None else to_json5(value)
    return value, to_json(value), json5_text


def _validator_class(schema: Any, field: str) -> Any:
    from jsonschema import validators

    if not isinstance(schema, dict) or "$schema" not in schema:
        return validators.Draft202012Validator
    uri = schema["$schema"]
    if not isinstance(uri, str):
        raise Invalid.field(field, "$schema must be a string (the URI of a JSON Schema dialect)")
    key = re.sub(r"^https?://", "", uri.strip()).rstrip("#")
    name = _DIALECTS.get(key)
    if name is None:
        known = ", ".join(f"https://{k}" if "/draft/" in k else f"http://{k}#" for k in _DIALECTS)
        raise Invalid.field(field, f"unknown $schema {uri!r}; use one of {known}")
    return getattr(validators, name)


def compile_schema(schema: Any, field: str = "schema") -> Any:
    """A validator for the schema; a 400 naming `field` when the schema is not valid JSON Schema."""
    if not isinstance(schema, dict | bool):
        raise Invalid.field(field, f"must be a JSON Schema (an object or a boolean), not {_kind(schema)}")
    from jsonschema.exceptions import SchemaError

    cls = _validator_class(schema, field)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        where = join_path("", exc.absolute_path)
        at = f" at {where}" if where else ""
        raise Invalid.field(field, _shorten(f"is not a valid JSON Schema{at}: {exc.message}")) from None
    return cls(schema)


def schema_violations(validator: Any, value: Any, field: str) -> list[dict[str, str]]:
    """Where `value` breaks the schema: `[{field: <field>.<path>, message}]`, in path order."""
    from jsonschema.exceptions import SchemaError
    from referencing.exceptions import Unresolvable

    try:
        errors = list(validator.iter_errors(value))
    except Unresolvable as exc:
        ref = str(getattr(exc, "ref", "") or "")
        remote = " (remote references are never fetched)" if "://" in ref else ""
        raise Invalid.field("schema", _shorten(f"cannot resolve $ref {ref!r}{remote}")) from None
    except RecursionError:
        raise Invalid.field(
            "schema", "cannot be applied: it refers to itself without end ($ref loop)"
        ) from None
    except SchemaError as exc:
        raise Invalid.field("schema", _shorten(f"cannot be applied: {exc.message}")) from None
    out = [
        {"field": join_path(field, error.absolute_path), "message": _shorten(error.message)}
        for error in errors
    ]
    return sorted(out, key=lambda e: (e["field"], e["message"]))


def validate_all(validator: Any, sites: Iterable[tuple[str, Any]]) -> None:
    """Every value against the schema; one 400 listing the violations (at most MAX_ERRORS)."""
    problems: list[dict[str, str]] = []
    for field, value in sites:
        problems.extend(schema_violations(validator, value, field))
        if len(problems) >= MAX_ERRORS:
            break
    if not problems:
        return
    problems = problems[:MAX_ERRORS]
    if len(problems) == 1:
        raise Invalid.field(problems[0]["field"], problems[0]["message"])
    raise Invalid.fields(problems)
