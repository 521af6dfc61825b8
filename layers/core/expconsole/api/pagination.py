"""Page-number pagination links as the contract defines them.

Links are relative (path plus query) and keep every other query parameter, so a client can
follow `nextPage` without rebuilding its filters. Services return a `Page`; only here does it
meet the request's path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode

from expconsole.models.pagination import DEFAULT_LIMIT, MAX_LIMIT, Page, PageQuery, Pagination, page_of

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "PageQuery",
    "Pagination",
    "link_base",
    "paginate",
    "pagination_of",
]

T = TypeVar("T")


def _link(path: str, others: list[tuple[str, str]], extra: list[tuple[str, str]]) -> str:
    query = urlencode(others + extra)
    return f"{path}?{query}" if query else path


def pagination_of(page: Page[Any], path: str, raw_query: str = "") -> dict[str, Any]:
    """The contract's pagination object for `page`, its links relative to the request."""
    others = [(k, v) for k, v in parse_qsl(raw_query, keep_blank_values=True) if k not in ("page", "limit")]
    number, limit = page.number, page.limit
    return {
        "itemsPerPage": limit,
        "pageNumber": number,
        "totalItems": page.total,
        "nextPage": _link(path, others, [("page", str(number + 1)), ("limit", str(limit))])
        if page.has_next
        else None,
        "previousPage": _link(path, others, [("page", str(number - 1)), ("limit", str(limit))])
        if number > 1
        else None,
        "all": _link(path, others, []),
    }


def paginate(
    items: Sequence[T], *, page: int, limit: int, path: str, raw_query: str = ""
) -> tuple[list[T], dict[str, Any]]:
    """Slice one page out of `items` and build the pagination object with relative links."""
    one = page_of(items, page=page, limit=limit)
    return one.items, pagination_of(one, path, raw_query)


def link_base(router: Any) -> tuple[str, str]:
    """The current request's path and raw query, from which pagination links are built."""
    event = router.current_event
    return event.raw_path, event.raw_query_string
