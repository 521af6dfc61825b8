"""Pages as the domain hands them out, and the pagination fields of the contract.

A service returns a `Page` (the items of one page and how many there are in all); the handler
turns it into the `pagination` object, whose links it builds from the request (`api.pagination`).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000

T = TypeVar("T")
U = TypeVar("U")


class PageQuery(BaseModel):
    """`limit` and `page` as every list endpoint takes them."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="Results per page (1 to 1000).")
    page: int = Field(1, ge=1, description="Page number, starting at 1.")


class Pagination(BaseModel):
    model_config = ConfigDict(defer_build=True)

    itemsPerPage: int
    pageNumber: int
    totalItems: int
    nextPage: str | None
    previousPage: str | None
    all: str


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing: its items, its number and size, and the total across pages."""

    items: list[T]
    number: int
    limit: int
    total: int

    @property
    def has_next(self) -> bool:
        return self.limit > 0 and self.number * self.limit < self.total

    def map(self, convert: Callable[[T], U]) -> "Page[U]":
        """The same page, each item converted: a list builds only its page's answers."""
        return Page(
            items=[convert(item) for item in self.items],
            number=self.number,
            limit=self.limit,
            total=self.total,
        )


def page_of(items: Sequence[T], *, page: int, limit: int) -> Page[T]:
    """Page `page` (from 1) of `limit` items out of `items`."""
    start = (page - 1) * limit
    chunk = list(items[start : start + limit]) if limit > 0 else []
    return Page(items=chunk, number=page, limit=limit, total=len(items))
