"""Days as events, pulse runs and results name them: `YYYY-MM-DD`, in UTC."""

from __future__ import annotations

import datetime as dt


def ds_of(ms: int) -> str:
    """The UTC day of a time in milliseconds since the epoch."""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).date().isoformat()


def today() -> str:
    """The current UTC day: the `ds` of a result answer while nothing is computed."""
    return dt.datetime.now(dt.UTC).date().isoformat()
