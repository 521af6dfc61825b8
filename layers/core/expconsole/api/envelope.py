"""The response envelope of the contract: `{message, data}` and `pagination` on lists."""

from __future__ import annotations

from typing import Any

from expconsole.api.pagination import link_base, pagination_of
from expconsole.models.pagination import Page


def ok(message: str, data: Any) -> dict[str, Any]:
    return {"message": message, "data": data}


def warned(message: str, data: Any, warnings: list[dict[str, Any]]) -> dict[str, Any]:
    """`ok` plus `warnings`: the request was applied, but something in it looks wrong."""
    return {"message": message, "data": data, "warnings": warnings}


def listed(message: str, data: list[Any], pagination: dict[str, Any]) -> dict[str, Any]:
    return {"message": message, "data": data, "pagination": pagination}


def paged(message: str, page: Page[Any], router: Any) -> dict[str, Any]:
    """`listed` for a service's page: the links come from the request the router is serving."""
    return listed(message, page.items, pagination_of(page, *link_base(router)))
