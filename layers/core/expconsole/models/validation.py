"""Turn pydantic's validation errors into `{field, message}` pairs a client can act on."""

from collections.abc import Sequence
from typing import Any

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


def field_errors(errors: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for error in errors:
        loc = error.get("loc", ())
        if error.get("type") == "json_invalid":
            loc = ("body",)
        out.append(
            {
                "field": field_path(loc) or ("body" if loc and loc[0] == "body" else ""),
                "message": message(error),
            }
        )
    return out
