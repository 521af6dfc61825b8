"""Who is calling and where from, for the duration of one request.

The handler wrapper sets it from the key the request presented (expconsole.api.auth); services
read it for creator and modifier bookkeeping and for permalinks, so their signatures stay about
the domain.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass


@dataclass(frozen=True)
class Caller:
    key_id: str
    key_kind: str
    base_url: str = ""


# Caller is frozen, so sharing the default instance is safe.
_caller: contextvars.ContextVar[Caller] = contextvars.ContextVar("caller", default=Caller("", "", ""))  # noqa: B039


def current() -> Caller:
    return _caller.get()


def set_caller(caller: Caller) -> contextvars.Token[Caller]:
    return _caller.set(caller)


def reset(token: contextvars.Token[Caller]) -> None:
    _caller.reset(token)
