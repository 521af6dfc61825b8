"""The response envelope of the contract: `{message, data}` and `pagination` on lists."""

from __future__ import annotations

from typing import Any


def ok(message: str, data: Any) -> dict[str, Any]:
    return {"message": message, "data": data}


def listed(message: str, data: list[Any], pagination: dict[str, Any]) -> dict[str, Any]:
    return {"message": message, "data": data, "pagination": pagination}
