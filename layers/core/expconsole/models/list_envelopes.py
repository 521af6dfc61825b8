"""Envelopes for lists whose element shape belongs to another resource's issue (for now)."""

from typing import Any

from expconsole.models.base import ResponseModel
from expconsole.models.pagination import Pagination


class AnyListEnvelope(ResponseModel):
    message: str
    data: list[dict[str, Any]]
    pagination: Pagination
