# ruff: noqa: RUF002 - formulas keep their own notation (Greek letters)
"""An independent reference of the pulse pipeline, computed from raw events in plain Python/numpy.

It reads the same metric bodies a user sends to `POST /console/v1/metrics` and the raw events a
user sends to the ingestion webhook, and applies the definitions of docs/pulse.md and docs/statistics.md
directly (no code of `expconsole.services.pulse` or `expconsole.stats`):

- a unit's exposure is its first `console::experiment_exposure` for the experiment at or after
  the start, to a known enabled group, before the decision and before the load's cutoff;
- post-exposure events: at or after the exposure, before the cutoff, within the rollup window;
  pre-period events: the 7 whole UTC days before the exposure's UTC day;
- unit values per metric type, winsorization at numpy's linear 99.9th percentile of the non-zero
  values of the analysed units, and the figures of a pulse result (Welch z/t, delta-method
  percent interval, CUPED with θ from a statsmodels OLS, ratios through their linearisation).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import statsmodels.api as sm
from scipy import stats as sps

DAY_MS = 86_400_000
PRE_DAYS = 7
EXPOSURE = "console::experiment_exposure"
WINSORIZED_TYPES = {"sum", "event_count", "event_count_custom", "composite_sum"}

Event = dict[str, Any]


def day_of(ms: int) -> int:
    """The UTC day number of a timestamp."""
    return ms // DAY_MS


def unit_of(event: Event) -> str | None:
    return (event.get("user") or {}).get("userID") or None


# --- exposures ----------------------------------------------------------------------------------------


@dataclass
class Exposures:
    first: dict[str, tuple[int, str]]  # unit -> (time, group) of the first valid exposure
    groups_seen: dict[str, set[str]]  # unit -> every group of its valid exposures
    counts: dict[str, int] = field(default_factory=dict)

    def crossover_units(self) -> int:
        return sum(1 for groups in self.groups_seen.values() if len(groups) > 1)


def exposures(
    events: Iterable[Event],
    exp_id: str,
    *,
    start: int,
    cutoff: int,
    groups: dict[str, bool],
    decision: int | None = None,
) -> Exposures:
    """`groups`: group id -> enabled. Exposures at or after `cutoff` are not seen at all."""
    first: dict[str, tuple[int, str]] = {}
    seen: dict[str, set[str]] = {}
    counts = {"valid": 0, "unknownGroup": 0, "disabledGroup": 0, "afterDecision": 0}
    for e in sorted(events, key=lambda e: e["timestamp"]):
        if e["event"] != EXPOSURE or (e.get("metadata") or {}).get("experiment") != exp_id:
            continue
        ts, unit = e["timestamp"], unit_of(e)
        if ts < start or ts >= cutoff or unit is None:
            continue
        group = e["metadata"].get("group")
        if group not in groups:
            counts["unknownGroup"] += 1
        elif not groups[group]:
            counts["disabledGroup"] += 1
        elif decision is not None and ts >= decision:
            counts["afterDecision"] += 1
        else:
            counts["valid"] += 1
            seen.setdefault(unit, set()).add(group)
            if unit not in first:
                first[unit] = (ts, group)
    return Exposures(first, seen, counts)


# --- criteria and unit values -------------------------------------------------------------------------


def _as_text(value: Any) -> str | None:
    """A value as criteria compare it: strings as sent, numbers and booleans as their JSON text."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _field(event: Event, criterion: dict[str, Any]) -> Any:
    ctype, column = criterion.get("type", "value"), criterion.get("column") or ""
    if ctype == "value" or column == "!service_value":
        return event.get("value")
    if ctype == "metadata":
        return (event.get("metadata") or {}).get(column)
    user = event.get("user") or {}
    if ctype == "user_custom":
        return (user.get("custom") or {}).get(column)
    return user.get(column)


def criterion_holds(event: Event, criterion: dict[str, Any]) -> bool:
    actual = _field(event, criterion)
    cond, values = criterion["condition"], criterion.get("values") or []
    text = _as_text(actual)
    if cond == "in":
        return text in values
    if cond == "not_in":
        return text not in values
    if cond == "=":
        return text == values[0] or (
            _as_number(actual) is not None and _as_number(actual) == _as_number(values[0])
        )
    if cond == "contains":
        return text is not None and any(v in text for v in values)
    if cond == "non_null":
        return actual is not None
    if cond == "is_null":
        return actual is None
    number, bound = _as_number(actual), _as_number(values[0]) if values else None
    if number is None or bound is None:
        return False
    return {">": number > bound, "<": number < bound, ">=": number >= bound, "<=": number <= bound}[cond]


def _matching(events: Sequence[Event], spec: dict[str, Any]) -> list[Event]:
    return [
        e
        for e in events
        if e["event"] == spec["name"] and all(criterion_holds(e, c) for c in spec.get("criteria") or [])
    ]


@dataclass
class Window:
    """The events of one unit a metric sees, and the days that count for `event_dau`."""

    events: list[Event]
    days: float  # denominator of event_dau


class Registry:
    """Metric bodies by id (`<name>::<type>`); `<event>::event_count|event_dau` are built in."""

    def __init__(self, bodies: Iterable[dict[str, Any]] = ()) -> None:
        self.bodies = {f"{b['name']}::{b['type']}": b for b in bodies}

    def body(self, mid: str) -> dict[str, Any]:
        if mid in self.bodies:
            return self.bodies[mid]
        name, _, mtype = mid.partition("::")
        assert mtype in ("event_count", "event_dau"), mid
        return {"name": name, "type": mtype}

    def value(self, mid: str, w: Window) -> float | tuple[float, float]:
        """A unit's value of the metric over its window: a number, or (numerator, denominator)."""
        body = self.body(mid)
        mtype = body["type"]
        if mtype == "event_count":
            return float(sum(1 for e in w.events if e["event"] == body["name"]))
        if mtype == "event_dau":
            days = {day_of(e["timestamp"]) for e in w.events if e["event"] == body["name"]}
            return len(days) / w.days if w.days > 0 else 0.0
        if mtype == "event_count_custom":
            total = 0.0
            for spec in body["metricEvents"]:
                hits = _matching(w.events, spec)
                if spec.get("type") == "count_distinct":
                    key = spec.get("metadataKey")
                    values = {
                        _as_text((e.get("metadata") or {}).get(key)) if key else _as_text(e.get("value"))
                        for e in hits
                    }
                    total += len(values - {None})
                else:
                    total += len(hits)
            return total
        if mtype == "event_user":
            return float(any(_matching(w.events, spec) for spec in body["metricEvents"]))
        if mtype == "sum":
            total = 0.0
            for spec in body["metricEvents"]:
                for e in _matching(w.events, spec):
                    raw = (
                        (e.get("metadata") or {}).get(spec["metadataKey"])
                        if spec.get("type") == "metadata"
                        else e.get("value")
                    )
                    total += _as_number(raw) or 0.0
            return total
        if mtype == "composite_sum":
            total = 0.0
            for ref in body["metricComponentMetrics"]:
                v = self.value(f"{ref['name']}::{ref['type']}", w)
                total += (v[0] / v[1] if v[1] else 0.0) if isinstance(v, tuple) else v
            return total
        if mtype == "ratio":
            num, den = (self.value(f"{r['name']}::{r['type']}", w) for r in body["metricComponentMetrics"])
            return float(num), float(den)  # type: ignore[arg-type]
        if mtype == "funnel":
            return self._funnel(body, w.events)
        raise AssertionError(f"no reference for {mtype}")

    def _step_events(self, step: dict[str, Any], events: Sequence[Event]) -> list[Event]:
        if step["type"] in ("event_count", "event_dau"):
            return [e for e in events if e["event"] == step["name"]]
        body = self.body(f"{step['name']}::{step['type']}")
        return _matching(events, body["metricEvents"][0])

    def _funnel(self, body: dict[str, Any], events: Sequence[Event]) -> float | tuple[float, float]:
        steps = body["funnelEventList"]
        times = [sorted(e["timestamp"] for e in self._step_events(s, events)) for s in steps]
        if (body.get("funnelCountDistinct") or "users") == "users":
            # each step at or after the previous step's event: greedily the earliest such event
            previous = -math.inf
            for step_times in times:
                later = [t for t in step_times if t >= previous]
                if not later:
                    return 0.0
                previous = later[0]
            return 1.0
        # events: a first-step event starts an attempt (a new one restarts it); the next step's
        # event at or after it advances it; the last step completes it.
        tagged = sorted((t, s) for s, step_times in enumerate(times) for t in step_times)
        starts = completions = 0
        at = 0
        for _, s in tagged:
            if s == 0:
                starts += 1
                at = 1
            elif at and s == at:
                at += 1
            if at == len(steps):
                completions += 1
                at = 0
        return float(completions), float(starts)


# --- the analysis of one result day -------------------------------------------------------------------


@dataclass
class GroupValues:
    """Per-unit values of one metric for one group (winsorized as the pipeline must)."""

    x: np.ndarray
    p: np.ndarray
    den: np.ndarray | None = None
    pden: np.ndarray | None = None


def cap(values: np.ndarray, analysed: np.ndarray | None = None) -> np.ndarray:
    """Winsorize at numpy's linear 99.9th percentile of the non-zero values (of `analysed` ones)."""
    pool = values if analysed is None else values[analysed]
    nonzero = pool[pool != 0]
    if nonzero.size == 0:
        return values
    return np.minimum(values, np.percentile(nonzero, 99.9))


def analyse_day(
    reg: Registry,
    metric_ids: Sequence[str],
    events: Sequence[Event],
    exp: Exposures,
    *,
    result_day: int,
    cutoff: int,
    rollup: int = -1,
) -> tuple[dict[str, dict[str, GroupValues]], dict[str, int]]:
    """values[metric][group] for the result day (units exposed before `cutoff` on or before it)."""
    by_unit: dict[str, list[Event]] = {}
    for e in events:
        unit = unit_of(e)
        if unit is not None and e["event"] != EXPOSURE:
            by_unit.setdefault(unit, []).append(e)
    units = sorted(u for u, (ts, _) in exp.first.items() if day_of(ts) <= result_day and ts < cutoff)
    group_of = np.array([exp.first[u][1] for u in units])
    first_window_day = result_day - rollup + 1 if rollup > 0 else -(10**9)
    post_w, pre_w = [], []
    for u in units:
        ts = exp.first[u][0]
        e_day = day_of(ts)
        mine = by_unit.get(u, [])
        post = [
            e
            for e in mine
            if ts <= e["timestamp"] < cutoff and first_window_day <= day_of(e["timestamp"]) <= result_day
        ]
        pre = [e for e in mine if e_day - PRE_DAYS <= day_of(e["timestamp"]) < e_day]
        post_w.append(Window(post, result_day - max(e_day, first_window_day) + 1))
        pre_w.append(Window(pre, PRE_DAYS))
    out: dict[str, dict[str, GroupValues]] = {}
    for mid in metric_ids:
        body = reg.body(mid)
        post_v = [reg.value(mid, w) for w in post_w]
        pre_v = [reg.value(mid, w) for w in pre_w]
        if body["type"] == "ratio" or (
            body["type"] == "funnel" and body.get("funnelCountDistinct") == "events"
        ):
            x = np.array([v[0] for v in post_v], dtype=float)  # type: ignore[index]
            d = np.array([v[1] for v in post_v], dtype=float)  # type: ignore[index]
            px = np.array([v[0] for v in pre_v], dtype=float)  # type: ignore[index]
            pd_ = np.array([v[1] for v in pre_v], dtype=float)  # type: ignore[index]
            if body["type"] == "ratio":
                num_t, den_t = (
                    reg.body(f"{r['name']}::{r['type']}")["type"] for r in body["metricComponentMetrics"]
                )
                if num_t in WINSORIZED_TYPES:
                    x, px = cap(x), cap(px)
                if den_t in WINSORIZED_TYPES:
                    d, pd_ = cap(d), cap(pd_)
            out[mid] = {
                g: GroupValues(x[group_of == g], px[group_of == g], d[group_of == g], pd_[group_of == g])
                for g in sorted(set(group_of))
            }
        else:
            x = np.array(post_v, dtype=float)
            px = np.array(pre_v, dtype=float)
            if body["type"] in WINSORIZED_TYPES:
                x, px = cap(x), cap(px)
            out[mid] = {g: GroupValues(x[group_of == g], px[group_of == g]) for g in sorted(set(group_of))}
    counts = {g: int((group_of == g).sum()) for g in sorted(set(group_of))}
    return out, counts


def moments(*columns: np.ndarray) -> tuple[int, list[float], list[list[float]]]:
    """n, column means and centred co-moments Σ(a_i − ā_i)(a_j − ā_j), straight from numpy."""
    data = np.column_stack(columns).astype(float)
    n = data.shape[0]
    means = data.mean(axis=0)
    centred = data - means
    return n, means.tolist(), (centred.T @ centred).tolist()


# --- figures of a pulse result --------------------------------------------------------------------------


def linearised(m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """L = R + (m − R·d)/d̄: mean R and sample variance the delta method's unit variance of R."""
    r = m.mean() / d.mean()
    return r + (m - r * d) / d.mean()


def figures(
    t: np.ndarray,
    c: np.ndarray,
    alpha: float,
    *,
    pre: tuple[np.ndarray, np.ndarray] | None = None,
    pre_nonzero: int | None = None,
    raw_means: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """Every figure of an entry from unit values (linearised ones for ratios).

    With `pre` (CUPED asked): applied when more than 100 units, more than 5% of them with a
    non-zero pre-period value, and a lower variance of the delta; θ is the coefficient of p in
    the OLS fit x ~ 1 + test + p over both groups, and units become x − θ·(p − p̄).
    """
    mt, mc = raw_means if raw_means is not None else (float(t.mean()), float(c.mean()))
    nt, nc = len(t), len(c)
    xt, xc = t, c
    applied = False
    if pre is not None:
        pt, pc = pre
        nonzero = pre_nonzero if pre_nonzero is not None else int(np.count_nonzero(pt) + np.count_nonzero(pc))
        if nt + nc > 100 and nonzero > 0.05 * (nt + nc):
            y = np.concatenate([t, c])
            p = np.concatenate([pt, pc])
            design = sm.add_constant(np.column_stack([np.r_[np.ones(nt), np.zeros(nc)], p]))
            theta = float(sm.OLS(y, design).fit().params[2])
            at, ac = t - theta * (pt - p.mean()), c - theta * (pc - p.mean())
            raw_v = t.var(ddof=1) / nt + c.var(ddof=1) / nc
            if at.var(ddof=1) / nt + ac.var(ddof=1) / nc < raw_v:
                xt, xc, applied = at, ac, True
    vt, vc = float(xt.var(ddof=1)), float(xc.var(ddof=1))
    V = vt / nt + vc / nc
    nu = V**2 / ((vt / nt) ** 2 / (nt - 1) + (vc / nc) ** 2 / (nc - 1))
    delta = float(xt.mean() - xc.mean())
    if nu < 100:
        p_value = float(sps.ttest_ind(xt, xc, equal_var=False).pvalue)
        crit = float(sps.t.ppf(1 - alpha / 2, nu))
    else:
        p_value = float(2 * sps.norm.sf(abs(delta) / math.sqrt(V)))
        crit = float(sps.norm.ppf(1 - alpha / 2))
    half = crit * math.sqrt(V)
    # percent change: the (adjusted) delta over the raw control mean; its delta-method interval
    # treats the test mean as control mean + delta (x̄_t without CUPED)
    treated = mc + delta
    pct = 100 * delta / mc
    pct_half = 100 * crit * math.sqrt(vt / (nt * mc**2) + treated**2 * vc / (nc * mc**4))
    return {
        "value": delta,
        "confidence_interval_delta": half,
        "confidence_interval": {"lower": delta - half, "upper": delta + half},
        "percent_change": pct,
        "percent_confidence_interval_delta": pct_half,
        "percent_confidence_interval": {"lower": pct - pct_half, "upper": pct + pct_half},
        "test_mean": mt,
        "control_mean": mc,
        "test_std": math.sqrt(vt / nt),
        "control_std": math.sqrt(vc / nc),
        "test_units": nt,
        "control_units": nc,
        "p_value": p_value,
        "cuped_applied": applied,
    }


def entry_figures(t: GroupValues, c: GroupValues, alpha: float, cuped: bool) -> dict[str, Any]:
    """The figures of one metric's entry, test group t against control c."""
    if t.den is None or c.den is None:
        return figures(t.x, c.x, alpha, pre=(t.p, c.p) if cuped else None)
    lt, lc = linearised(t.x, t.den), linearised(c.x, c.den)
    raw = (float(t.x.mean() / t.den.mean()), float(c.x.mean() / c.den.mean()))
    if not cuped:
        return figures(lt, lc, alpha, raw_means=raw)
    assert t.pden is not None and c.pden is not None
    nonzero = int(np.count_nonzero((t.p != 0) | (t.pden != 0)) + np.count_nonzero((c.p != 0) | (c.pden != 0)))
    pre = (linearised(t.p, t.pden), linearised(c.p, c.pden))
    return figures(lt, lc, alpha, pre=pre, pre_nonzero=nonzero, raw_means=raw)


def srm_p_value(observed: Sequence[int], sizes: Sequence[float]) -> float:
    total = sum(observed)
    expected = [total * s / sum(sizes) for s in sizes]
    return float(sps.chisquare(observed, f_exp=expected).pvalue)


def close(got: Any, want: Any, rel: float = 1e-9, abs_tol: float = 1e-12) -> bool:
    if want is None:
        return got is None
    return got is not None and math.isclose(got, want, rel_tol=rel, abs_tol=abs_tol)
