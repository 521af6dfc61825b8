"""Page-number pagination as the contract defines it.

Links are relative (path plus query) and keep every other query parameter, so a client can
follow `nextPage` without rebuilding its filters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000

T = TypeVar("T")


class PageQuery(BaseModel):
    """`limit` and `page` as every list endpoint takes them."""

    model_config = ConfigDict(extra="ignore")

    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="Results per page (1 to 1000).")
    page: int = Field(1, ge=1, description="Page number, starting at 1.")


class Pagination(BaseModel):
    itemsPerPage: int
    pageNumber: int
    totalItems: int
    nextPage: str | None
    previousPage: str | None
    all: str


def _link(path: str, others: list[tuple[str, str]], extra: list[tuple[str, str]]) -> str:
    query = urlencode(others + extra)
    return f"{path}?{query}" if query else path


def paginate(
    items: Sequence[T], *, page: int, limit: int, path: str, raw_query: str = ""
) -> tuple[list[T], dict[str, Any]]:
    """Slice one page out of `items` and build the pagination object with relative links."""
    others = [(k, v) for k, v in parse_qsl(raw_query, keep_blank_values=True) if k not in ("page", "limit")]
    total = len(items)
    start = (page - 1) * limit
    chunk = list(items[start : start + limit]) if limit > 0 else []
    has_next = limit > 0 and start + limit < total
    pagination = {
        "itemsPerPage": limit,
        "pageNumber": page,
        "totalItems": total,
        "nextPage": _link(path, others, [("page", str(page + 1)), ("limit", str(limit))])
        if has_next
        else None,
        "previousPage": _link(path, others, [("page", str(page - 1)), ("limit", str(limit))])
        if page > 1
        else None,
        "all": _link(path, others, []),
    }
    return chunk, pagination


def link_base(router: Any) -> tuple[str, str]:
    """The current request's path and raw query, from which pagination links are built."""
    event = router.current_event
    return event.raw_path, event.raw_query_string
