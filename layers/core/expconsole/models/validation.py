"""Turn pydantic's validation errors into `{field, message}` pairs a client can act on."""

import difflib
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

_MESSAGES = {
    "missing": "is required",
    "extra_forbidden": "is not a field of this request",
}


def field_path(loc: Sequence[Any]) -> str:
    """`("body", "rules", 0, "name")` → `rules[0].name`; query/path params by their name."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        source = parts.pop(0)
        # Query models are declared as a parameter named `query`: its name is noise here.
        if source == "query" and len(parts) > 1 and parts[0] == "query":
            parts.pop(0)
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


# Patterns our models use, said in words (the pattern itself is kept for precision).
_PATTERNS = {
    r"^[a-zA-Z0-9_\-. ]*$": "may contain only letters, digits, underscore, hyphen, period and space",
    r"^[a-zA-Z0-9_\-.]*$": "may contain only letters, digits, underscore, hyphen and period",
    r"^[a-zA-Z0-9_\- ]*$": "may contain only letters, digits, underscore, hyphen and space",
    r"^[a-zA-Z0-9_\-]*$": "may contain only letters, digits, underscore and hyphen",
}


def message(error: dict[str, Any]) -> str:
    kind = error.get("type", "")
    if kind in _MESSAGES:
        return _MESSAGES[kind]
    if kind == "string_pattern_mismatch":
        pattern = (error.get("ctx") or {}).get("pattern", "")
        if pattern in _PATTERNS:
            return f"{_PATTERNS[pattern]} (pattern {pattern})"
    if kind == "json_invalid":
        detail = (error.get("ctx") or {}).get("error", "")
        return (
            f"the request body is not valid JSON ({detail})"
            if detail
            else "the request body is not valid JSON"
        )
    text = str(error.get("msg", "is invalid"))
    for prefix in ("Value error, ", "Assertion failed, "):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    return text


def field_errors(errors: Sequence[dict[str, Any]], model: Any = None) -> list[dict[str, str]]:
    """`model`: the type the input was validated as (a body model, `list[Rule]`), whose errors'
    `loc` start with one element before the model's own path (`body`, or the field holding it);
    with it, an unknown field's message names the closest known field where one is close."""
    out: list[dict[str, str]] = []
    for error in errors:
        loc = error.get("loc", ())
        if error.get("type") == "json_invalid":
            loc = ("body",)
        text = message(error)
        if error.get("type") == "extra_forbidden" and model is not None and len(loc) >= 2:
            known = {name for found in _models_at(model, list(loc[1:-1])) for name in _field_names(found)}
            near = closest_name(str(loc[-1]), known)
            if near:
                text += f"; did you mean {near}?"
        out.append(
            {
                "field": field_path(loc) or ("body" if loc and loc[0] == "body" else ""),
                "message": text,
            }
        )
    return out


def closest_name(name: str, known: Iterable[str]) -> str | None:
    """The known name a misspelt one most likely meant, or None: the same up to case, `_` and `-`
    (`is_enabled`), one holding the other (`enabled` → `isEnabled`, `desc` → `description`),
    else the nearest spelling (`condtions` → `conditions`)."""
    by_plain = {_plain(k): k for k in sorted(known)}
    given = _plain(name)
    if given in by_plain:
        return by_plain[given]
    holding = [p for p in by_plain if min(len(p), len(given)) >= 3 and (given in p or p in given)]
    if holding:
        return by_plain[max(holding, key=lambda p: (difflib.SequenceMatcher(None, given, p).ratio(), p))]
    near = difflib.get_close_matches(given, list(by_plain), n=1, cutoff=0.75)
    return by_plain[near[0]] if near else None


def _plain(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


def _field_names(model: type[BaseModel]) -> set[str]:
    """The names a client sends: each field's alias, else its name."""
    return {info.alias or name for name, info in model.model_fields.items()}


def _models_at(annotation: Any, path: list[Any]) -> list[type[BaseModel]]:
    """The models a value at `path` (a pydantic `loc`, within `annotation`) is validated as: more
    than one under a union. A union member's tag in the path (pydantic puts the member's name
    there for a union of several types) selects that member."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _models_at(typing.get_args(annotation)[0], path)
    if origin in (typing.Union, types.UnionType):
        members = [m for m in typing.get_args(annotation) if m is not type(None)]
        if len(members) > 1 and path and isinstance(path[0], str):
            tagged = [m for m in members if getattr(m, "__name__", None) == path[0]]
            if tagged:
                return _models_at(tagged[0], path[1:])
        return [found for member in members for found in _models_at(member, path)]
    if not path:
        return [annotation] if isinstance(annotation, type) and issubclass(annotation, BaseModel) else []
    step, rest = path[0], path[1:]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        for name, info in annotation.model_fields.items():
            if step in (name, info.alias):
                return _models_at(info.annotation, rest)
        return []
    arguments = typing.get_args(annotation)
    if isinstance(step, int) and origin in (list, tuple, set, frozenset, Sequence) and arguments:
        return _models_at(arguments[0], rest)
    if isinstance(origin, type) and issubclass(origin, Mapping) and len(arguments) == 2:
        return _models_at(arguments[1], rest)
    return []
