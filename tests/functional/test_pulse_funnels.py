"""Funnel semantics the pulse pipeline keeps, on hand-made units whose values are worked out here.

Users mode: a unit counts once it did every step in order, each at or after the previous step's
time; two consecutive steps on the same event need two events (one event is one step). Events
mode: a first-step event starts an attempt and restarts one in progress (so a later step on the
first step's event restarts instead of advancing), the next step's event advances it, the last
completes it; events at the same instant are taken in step order. The record holds mean
completions and mean starts. Cumulative windows carry an attempt across days; a 1-day window
sees only that day's events.
"""

from __future__ import annotations

from typing import Any

import pytest

from expconsole import kinds
from expconsole.services.pulse import run
from expconsole.store import group_stats
from tests.conftest import Caller
from tests.functional import test_pulse as base
from tests.functional.test_pulse import DAY_MS, EXPOSURE, HOUR, START, S, ds, make_experiment, send

clock, fns = base.clock, base.fns  # the pulse tests' fixtures: a settable clock, the functions


def funnel(name: str, steps: list[str], mode: str) -> dict[str, Any]:
    return {
        "name": name,
        "type": "funnel",
        "funnelEventList": [{"name": s, "type": "event_count"} for s in steps],
        "funnelCountDistinct": mode,
    }


FUNNELS = [
    funnel("two views", ["view", "view"], "users"),
    funnel("view then cart", ["view", "cart"], "events"),
    funnel("view cart view", ["view", "cart", "view"], "events"),
]
IDS = [f"{f['name']}::funnel" for f in FUNNELS]
# Unit -> (group, [(day offset from the start day, hour, event)]); exposures at START + 1 h.
UNITS = {
    "a": ("ctl", [(0, 8, "view"), (0, 9, "view")]),
    # the same instant: the cart is at or after the view, and the view at or after the cart (the
    # third step of "view cart view" is that same view event, as ordered by time, then step)
    "b": ("ctl", [(0, 8, "view"), (0, 8, "cart")]),
    "c": ("t1", [(0, 8, "view")]),
    "d": ("t1", [(0, 8, "view"), (1, 1, "cart"), (1, 2, "cart"), (2, 1, "view"), (2, 2, "cart")]),
}
# Per result day (0, 1, 2) and unit: two views (0/1), view then cart (completions, starts),
# view cart view (completions, starts).
CUMULATIVE = {
    0: {
        "a": (1, (0, 2), (0, 2)),
        "b": (0, (1, 1), (1, 1)),
        "c": (0, (0, 1), (0, 1)),
        "d": (0, (0, 1), (0, 1)),
    },
    1: {
        "a": (1, (0, 2), (0, 2)),
        "b": (0, (1, 1), (1, 1)),
        "c": (0, (0, 1), (0, 1)),
        "d": (0, (1, 1), (0, 1)),
    },
    2: {
        "a": (1, (0, 2), (0, 2)),
        "b": (0, (1, 1), (1, 1)),
        "c": (0, (0, 1), (0, 1)),
        "d": (1, (2, 2), (0, 2)),
    },
}
NOTHING = (0, (0, 0), (0, 0))
# The same days counted one at a time: day 0 is the cumulative day 0; on day 2 only d's second
# visit (view cart view) is new.
ONE_DAY = {
    0: CUMULATIVE[0],
    1: dict.fromkeys("abcd", NOTHING),
    2: {**dict.fromkeys("abc", NOTHING), "d": (0, (1, 1), (0, 1))},
}


def _events(exp_id: str) -> list[dict[str, Any]]:
    out = []
    for unit, (group, steps) in UNITS.items():
        user = {"userID": unit}
        out.append(
            {
                "event": EXPOSURE,
                "user": user,
                "timestamp": START + HOUR,
                "metadata": {"experiment": exp_id, "group": group},
            }
        )
        out += [
            {"event": name, "user": user, "timestamp": (S + day) * DAY_MS + hour * HOUR}
            for day, hour, name in steps
        ]
    return out


@pytest.mark.parametrize(
    ("rollup", "expected"), [(None, CUMULATIVE), (1, ONE_DAY)], ids=["cumulative", "1-day"]
)
def test_funnel_steps_attempts_and_restarts(
    fns: dict[str, Caller], clock: Any, rollup: int | None, expected: dict[int, dict[str, Any]]
) -> None:
    for body in FUNNELS:
        status, out = fns["metrics"]("POST", "/console/v1/metrics", body)
        assert status == 201, out
    refs = [{"name": f["name"], "type": "funnel"} for f in FUNNELS]
    extra = {} if rollup is None else {"defaultRollupWindow": rollup}
    exp_id = make_experiment(fns, clock, primaryMetrics=refs, secondaryMetrics=[], **extra)
    now = (S + 2) * DAY_MS + 12 * HOUR
    send(_events(exp_id), now=now)
    run.load_pulse(kinds.EXPERIMENT, exp_id, now=now)
    for day, values in expected.items():
        got = {
            (r.metricID, r.groupID): r for r in group_stats.read_day(kinds.EXPERIMENT, exp_id, ds(S + day))
        }
        for group in ("ctl", "t1"):
            units = [u for u, (g, _) in UNITS.items() if g == group]
            for m, mid in enumerate(IDS):
                record = got[(mid, group)]
                assert record.n == len(units)
                if m == 0:
                    want = [sum(values[u][0] for u in units) / len(units)]
                    assert (record.kind, record.means[:1]) == ("mean", want), (day, group, mid)
                else:
                    want = [sum(values[u][m][i] for u in units) / len(units) for i in (0, 1)]
                    assert (record.kind, record.means[:2]) == ("ratio", want), (day, group, mid)
