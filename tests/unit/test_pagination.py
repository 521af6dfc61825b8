"""Pagination: slices and relative links that keep the other filters."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from expconsole.api.pagination import PageQuery, paginate

ITEMS = list(range(7))


def test_first_middle_and_last_pages_link_to_neighbours_keeping_filters() -> None:
    first, p1 = paginate(ITEMS, page=1, limit=3, path="/console/v1/gates", raw_query="tags=web&limit=3")
    assert first == [0, 1, 2]
    assert p1["nextPage"] == "/console/v1/gates?tags=web&page=2&limit=3"
    assert p1["previousPage"] is None
    middle, p2 = paginate(
        ITEMS, page=2, limit=3, path="/console/v1/gates", raw_query="tags=web&page=2&limit=3"
    )
    assert middle == [3, 4, 5]
    assert p2["previousPage"] == "/console/v1/gates?tags=web&page=1&limit=3"
    last, p3 = paginate(ITEMS, page=3, limit=3, path="/console/v1/gates", raw_query="page=3&tags=web&limit=3")
    assert last == [6]
    assert p3["nextPage"] is None
    assert {p["totalItems"] for p in (p1, p2, p3)} == {7}
    assert p3["itemsPerPage"] == 3 and p3["pageNumber"] == 3
    assert p3["all"] == "/console/v1/gates?tags=web"


def test_repeated_filters_survive_in_links() -> None:
    _, pagination = paginate(ITEMS, page=1, limit=2, path="/p", raw_query="tags=a&tags=b")
    assert pagination["nextPage"] == "/p?tags=a&tags=b&page=2&limit=2"


def test_page_past_the_end_is_empty_with_a_way_back() -> None:
    chunk, pagination = paginate(ITEMS, page=9, limit=3, path="/p")
    assert chunk == []
    assert pagination["nextPage"] is None
    assert pagination["previousPage"] == "/p?page=8&limit=3"


def test_following_next_links_visits_every_item_once() -> None:
    seen, page = [], 1
    while True:
        chunk, pagination = paginate(ITEMS, page=page, limit=2, path="/p")
        seen.extend(chunk)
        if pagination["nextPage"] is None:
            break
        page += 1
    assert seen == ITEMS


def test_defaults_and_bounds() -> None:
    assert PageQuery().limit == 100 and PageQuery().page == 1
    assert PageQuery(limit=1000).limit == 1000
    for bad in ({"limit": 1001}, {"limit": 0}, {"page": 0}):
        with pytest.raises(ValidationError):
            PageQuery(**bad)
