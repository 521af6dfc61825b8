"""Finished days compacted into Parquet, apart from the loads that read them.

A load reads each day of its experiment once and keeps that day's unit aggregate, so compacting
inside the load put the Parquet encoding and its upload on the load's critical path (about a
third of a first load at the bench's size, more than the load saved by reading Parquet after it).
Compacted days pay back when the same day is read again: by other experiments' first loads, full
reloads, the events catalogue and Athena. So the hourly schedule finds the finished days that the
due loads read and that hold raw objects the Parquet file does not (`pending_days`), and compacts
them in their own invocations (`compact_days`; in AWS the pulse function invokes itself with
`{"compact": {"days": [...]}}`, at most `DAYS_PER_INVOCATION` days each), beside the loads. A
load reads whatever a day is at its start: the Parquet file named by the day's manifest plus the
raw objects not in it (daydata.day_select), so results do not depend on whether, or when, a day
was compacted.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from expconsole.days import ds_of
from expconsole.services.pulse import daydata, engine
from expconsole.services.pulse.plan import PRE_DAYS, EntityPlan

# A full-size day (1.4M events) compacts in about 20 s on 2 vCPUs: 14 days stay far inside
# Lambda's 15 minutes, and a backlog spreads over several invocations.
DAYS_PER_INVOCATION = 14


def read_days(plans: Iterable[EntityPlan], now_ms: int) -> list[str]:
    """The finished days (before today, UTC) that loads of these plans read, oldest first."""
    today = dt.date.fromisoformat(ds_of(now_ms))
    days: set[str] = set()
    for plan in plans:
        first = dt.date.fromisoformat(ds_of(plan.start_ms)) - dt.timedelta(days=PRE_DAYS)
        last = today - dt.timedelta(days=1)
        if plan.end_ms is not None:
            last = min(last, dt.date.fromisoformat(ds_of(plan.end_ms - 1)))
        days.update((first + dt.timedelta(days=i)).isoformat() for i in range((last - first).days + 1))
    return sorted(days)


def pending_days(days: Iterable[str]) -> list[str]:
    """Those of `days` holding raw objects that their compacted Parquet file does not."""
    return [ds for ds in days if not daydata.listing(ds).compacted]


def batches(days: list[str]) -> list[list[str]]:
    return [days[i : i + DAYS_PER_INVOCATION] for i in range(0, len(days), DAYS_PER_INVOCATION)]


def compact_days(days: Iterable[str], now_ms: int) -> list[str]:
    """Compact each finished day of `days` that needs it (daydata.compact); the days written.

    Today is never compacted: it is still receiving events."""
    today = ds_of(now_ms)
    written = []
    with engine.Spill() as spill:
        con = engine.connect(spill.duckdb)
        try:
            for ds in sorted(set(days)):
                if ds >= today:
                    continue
                listed = daydata.listing(ds)
                if daydata.compact(con, spill, ds, listed=listed):
                    written.append(ds)
                spill.forget(listed.keys)  # bounded disk over a backlog of days
                spill.forget_under(daydata.compacted_prefix(ds))
        finally:
            con.close()
    return written
