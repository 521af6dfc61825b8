"""The names a warning suggests come from the counters of the recent days, and only those."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from expconsole.services import event_names
from expconsole.store import event_counters
from expconsole.store.event_counters import NameTally

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def _logged(name: str, days_ago: int) -> None:
    day = (NOW - timedelta(days=days_ago)).date().isoformat()
    event_counters.record(
        day, f"events-{name}.jsonl", {name: NameTally(count=3)}, int(NOW.timestamp() * 1000)
    )


def test_recent_names_are_those_logged_from_tomorrow_back_to_thirteen_days_ago(aws: None) -> None:
    """Tomorrow counts (a client's clock may run ahead of UTC); fourteen days back does not."""
    for name, days_ago in [
        ("tomorrow_signup", -1),
        ("today_click", 0),
        ("last_week_purchase", 7),
        ("thirteen_days_view", 13),
        ("fourteen_days_view", 14),
        ("last_month_refund", 30),
    ]:
        _logged(name, days_ago)
    _logged("today_click", 3)  # a name logged on several days is listed once

    assert event_names.recent_names(NOW) == [
        "last_week_purchase",
        "thirteen_days_view",
        "today_click",
        "tomorrow_signup",
    ]


def test_a_typo_is_warned_with_the_recent_names_like_it(aws: None) -> None:
    _logged("purchase", 2)
    _logged("page_view", 5)
    (warning,) = event_names.experiment_warnings(
        {"primaryMetrics": [{"name": "purchse", "type": "event_count"}]}
    )
    assert warning["event"] == "purchse" and warning["closest"] == ["purchase"]
