"""Pulse results through the handler on moto: stored statistics in, contract entries out.

Every figure is recomputed independently from the RAW unit values (scipy, statsmodels) and must
agree to 1e-9 relative.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from expconsole import kinds
from expconsole.models.results import HOLDOUT_CONTROL_GROUP, HOLDOUT_TEST_GROUP
from expconsole.services import results as results_service
from expconsole.stats import CupedStatistic, SampleMeanStatistic
from expconsole.store import group_stats
from tests.conftest import Caller

REL = 1e-9
GROUPS = ["ctl", "t1", "t2"]
PRIMARY = ["pa::event_count", "pb::event_count"]
SECONDARY = ["sc::event_count"]
OTHER = ["od::event_count"]
ALL_METRICS = PRIMARY + SECONDARY + OTHER
PATH = "/console/v1/experiments/{}/pulse_results"
_ids = itertools.count()


def _ref(mid: str) -> dict[str, str]:
    name, _, kind = mid.partition("::")
    return {"name": name, "type": kind}


@pytest.fixture
def fns(aws: None) -> dict[str, Caller]:
    return {name: Caller(name) for name in ("experiments", "holdouts", "results")}


def make_experiment(fns: dict[str, Caller], **fields: Any) -> dict[str, Any]:
    body = {
        "name": f"exp {next(_ids)}",
        "groups": [
            {"name": "Control", "id": "ctl", "size": 34},
            {"name": "Test one", "id": "t1", "size": 33},
            {"name": "Test two", "id": "t2", "size": 33},
        ],
        "controlGroupID": "ctl",
        "primaryMetrics": [_ref(m) for m in PRIMARY],
        "secondaryMetrics": [_ref(m) for m in SECONDARY],
        "otherMetrics": [_ref(m) for m in OTHER],
        **fields,
    }
    status, out = fns["experiments"]("POST", "/console/v1/experiments", body)
    assert status == 201, out
    return out["data"]


def store(kind: str, entity_id: str, ds: str, values: dict[str, dict[str, Any]], cuped: bool = False) -> None:
    """values[metric][group] = raw unit values (or (x, p) pairs of arrays with cuped)."""
    records = []
    for mid, by_group in values.items():
        for gid, raw in by_group.items():
            stat = CupedStatistic.from_values(*raw) if cuped else SampleMeanStatistic.from_values(raw)
            records.append(
                results_service.record_of(
                    stat, kind=kind, entity_id=entity_id, ds=ds, metric_id=mid, group_id=gid
                )
            )
    group_stats.put_day(kind, entity_id, ds, records)


def close(got: float | None, want: float | None) -> bool:
    if want is None or (isinstance(want, float) and not math.isfinite(want)):
        return got is None
    return got is not None and math.isclose(got, want, rel_tol=REL, abs_tol=1e-300)


# --- independent reference from raw values ---------------------------------------------------------------


def reference(t: np.ndarray, c: np.ndarray, alpha: float) -> dict[str, float]:
    nt, nc = len(t), len(c)
    mt, mc = float(np.mean(t)), float(np.mean(c))
    vt, vc = float(np.var(t, ddof=1)), float(np.var(c, ddof=1))
    V = vt / nt + vc / nc
    nu = V**2 / ((vt / nt) ** 2 / (nt - 1) + (vc / nc) ** 2 / (nc - 1))
    delta = mt - mc
    if nu < 100:
        p = float(sps.ttest_ind(t, c, equal_var=False).pvalue)
        crit = float(sps.t.ppf(1 - alpha / 2, nu))
    else:
        p = float(2 * sps.norm.sf(abs(delta / math.sqrt(V))))
        crit = float(sps.norm.ppf(1 - alpha / 2))
    half = crit * math.sqrt(V)
    pct_half = 100 * crit * math.sqrt(vt / (nt * mc**2) + mt**2 * vc / (nc * mc**4))
    return {
        "value": delta,
        "confidence_interval_delta": half,
        "lower": delta - half,
        "upper": delta + half,
        "percent_change": 100 * delta / mc,
        "percent_confidence_interval_delta": pct_half,
        "test_mean": mt,
        "control_mean": mc,
        "test_std": math.sqrt(vt / nt),
        "control_std": math.sqrt(vc / nc),
        "p_value": p,
        "V": V,
    }


def bh_alpha(p_values: list[float], alpha: float) -> float:
    reject = multipletests(p_values, alpha=alpha, method="fdr_bh")[0]
    k = int(np.sum(reject))
    return (k if k else 1) * alpha / len(p_values)


def check_entry(entry: dict[str, Any], ref: dict[str, float], alpha_used: float) -> None:
    for key in (
        "value",
        "confidence_interval_delta",
        "percent_change",
        "percent_confidence_interval_delta",
        "test_mean",
        "control_mean",
        "test_std",
        "control_std",
        "p_value",
    ):
        assert close(entry[key], ref[key]), (key, entry[key], ref[key])
    assert close(entry["confidence_interval"]["lower"], ref["lower"])
    assert close(entry["confidence_interval"]["upper"], ref["upper"])
    pc, ph = ref["percent_change"], ref["percent_confidence_interval_delta"]
    assert close(entry["percent_confidence_interval"]["lower"], pc - ph)
    assert close(entry["percent_confidence_interval"]["upper"], pc + ph)
    assert close(entry["adjustedAlpha"], alpha_used)
    # sequential testing off: the sequential fields are the fixed-horizon ones
    assert entry["sequentialTestingPValue"] == entry["p_value"]
    assert entry["percent_sequential_testing_confidence_interval_delta"] == ph or close(
        entry["percent_sequential_testing_confidence_interval_delta"], ph
    )


# --- property: every figure against scipy/statsmodels --------------------------------------------------

unit_values = st.lists(st.integers(0, 30), min_size=3, max_size=150).filter(lambda v: len(set(v)) > 1)
scenario = st.fixed_dictionaries(
    {
        "values": st.fixed_dictionaries(
            {m: st.fixed_dictionaries({g: unit_values for g in GROUPS}) for m in ALL_METRICS}
        ).filter(lambda vs: all(np.mean(vs[m]["ctl"]) != 0 for m in vs)),
        "confidence": st.sampled_from([80.0, 90.0, 95.0, 99.0, 97.5]),
        "correction": st.sampled_from(
            ["none", "bonf_variant", "bonf_metric", "bonf_both", "bh_metric", "bh_variant"]
        ),
        "weight": st.sampled_from([None, 0.25, 0.8]),
        "test": st.sampled_from(["t1", "t2"]),
    }
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=scenario)
def test_every_figure_matches_an_independent_computation(
    fns: dict[str, Caller], case: dict[str, Any]
) -> None:
    exp_id = "prop_exp"
    if not hasattr(fns["results"], "made"):
        make_experiment(fns, id=exp_id)
        fns["results"].made = True  # type: ignore[attr-defined]
    store(kinds.EXPERIMENT, exp_id, "2026-03-01", case["values"])
    corr = case["correction"]
    params = {
        "control": "ctl",
        "test": case["test"],
        "cuped": "false",
        "confidence": str(case["confidence"]),
        "date": "2026-03-01",
        "applyBonferroniPerVariant": str(corr in ("bonf_variant", "bonf_both")).lower(),
        "applyBonferroniPerMetric": str(corr in ("bonf_metric", "bonf_both")).lower(),
        "applyBenjaminiHochbergPerMetric": str(corr == "bh_metric").lower(),
        "applyBenjaminiHochbergPerVariant": str(corr == "bh_variant").lower(),
    }
    if case["weight"] is not None:
        params["bonferroniPrimaryMetricWeight"] = str(case["weight"])
    query = "&".join(f"{k}={v}" for k, v in params.items())
    status, body = fns["results"]("GET", PATH.format(exp_id), query=query)
    assert status == 200, body
    data = body["data"]
    assert data["ds"] == "2026-03-01"

    alpha = 1 - case["confidence"] / 100
    arr = {m: {g: np.asarray(v, dtype=float) for g, v in gv.items()} for m, gv in case["values"].items()}
    refs = {(m, g): reference(arr[m][g], arr[m]["ctl"], alpha) for m in ALL_METRICS for g in ("t1", "t2")}
    test = case["test"]

    def expected_alpha(mid: str) -> float:
        if mid in OTHER:
            return alpha
        if corr in ("bh_metric", "bh_variant"):
            if corr == "bh_metric":
                family = [refs[(m, test)]["p_value"] for m in PRIMARY + SECONDARY]
            else:
                family = [refs[(mid, g)]["p_value"] for g in ("t1", "t2")]
            return bh_alpha(family, alpha)
        base = alpha / 2 if corr in ("bonf_variant", "bonf_both") else alpha
        if corr in ("bonf_metric", "bonf_both"):
            w = 0.5 if case["weight"] is None else case["weight"]
            return base * w / len(PRIMARY) if mid in PRIMARY else base * (1 - w) / len(SECONDARY)
        return base

    sections = {"primaryMetrics": PRIMARY, "secondaryMetrics": SECONDARY, "otherMetrics": OTHER}
    for section, mids in sections.items():
        assert [e["metricID"] for e in data[section]] == mids
        for entry in data[section]:
            mid = entry["metricID"]
            a = expected_alpha(mid)
            r = refs[(mid, test)]
            # the intervals use the adjusted alpha: recompute with it
            check_entry(entry, reference(arr[mid][test], arr[mid]["ctl"], a), a)
            assert close(entry["p_value"], r["p_value"])
            assert entry["test_units"] == len(arr[mid][test]) and entry["control_units"] == len(
                arr[mid]["ctl"]
            )
            assert entry["metricName"] == mid.split("::")[0] and entry["directionality"] == "increase"


# --- validation ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("control=ctl", "test"),  # three groups: test cannot default
        ("control=ctl&test=t1&confidence=0.99", "confidence"),  # a percentage: 99, not 0.99
        ("control=ctl&test=t1&confidence=1", "confidence"),
        ("control=ctl&test=t1&bonferroniCorrection=true", "bonferroniCorrection"),  # not a parameter
        ("control=nope&test=t1", "control"),
        ("control=ctl&test=Test one", "test"),
        ("control=ctl&test=ctl", "test"),
        ("control=ctl&test=t1&confidence=0", "confidence"),
        ("control=ctl&test=t1&confidence=100", "confidence"),
        ("control=ctl&test=t1&confidence=abc", "confidence"),
        ("control=ctl&test=t1&confidence=nan", "confidence"),
        ("control=ctl&test=t1&cuped=yes", "cuped"),
        ("control=ctl&test=t1&cuped=1", "cuped"),
        ("control=ctl&test=t1&applyBonferroniPerVariant=TRUEISH", "applyBonferroniPerVariant"),
        ("control=ctl&test=t1&applyBonferroniPerMetric=no", "applyBonferroniPerMetric"),
        ("control=ctl&test=t1&applyBenjaminiHochbergPerMetric=0", "applyBenjaminiHochbergPerMetric"),
        ("control=ctl&test=t1&applyBenjaminiHochbergPerVariant=on", "applyBenjaminiHochbergPerVariant"),
        ("control=ctl&test=t1&benjaminiPrimaryMetricsOnly=y", "benjaminiPrimaryMetricsOnly"),
        ("control=ctl&test=t1&bonferroniPrimaryMetricWeight=1.5", "bonferroniPrimaryMetricWeight"),
        ("control=ctl&test=t1&bonferroniPrimaryMetricWeight=-0.1", "bonferroniPrimaryMetricWeight"),
        ("control=ctl&test=t1&date=2026-13-01", "date"),
        ("control=ctl&test=t1&date=20260101", "date"),
        ("control=ctl&test=t1&date=2026-02-30", "date"),
    ],
)
def test_bad_parameters_are_400_naming_the_parameter(fns: dict[str, Caller], query: str, field: str) -> None:
    exp = make_experiment(fns)
    status, body = fns["results"]("GET", PATH.format(exp["id"]), query=query)
    assert status == 400, body
    assert field in body["message"]
    assert any(e["field"] == field for e in body.get("errors", [])), body


def test_unknown_experiment_and_holdout_are_404(fns: dict[str, Caller]) -> None:
    status, body = fns["results"]("GET", PATH.format("missing"), query="control=a&test=b")
    assert status == 404 and "missing" in body["message"]
    status, body = fns["results"]("GET", "/console/v1/holdouts/missing/pulse_results")
    assert status == 404


def _utc_today() -> str:
    return dt.datetime.now(dt.UTC).date().isoformat()


def test_no_results_yet_is_an_empty_200_for_today_or_the_day_asked(fns: dict[str, Caller]) -> None:
    """`ds` is always a day (the schema's YYYY-MM-DD string), as holdouts answer: never null."""
    exp = make_experiment(fns)
    before = _utc_today()
    status, body = fns["results"]("GET", PATH.format(exp["id"]), query="control=ctl&test=t1")
    days = {before, _utc_today()}  # a run across midnight may answer either
    assert status == 200
    empty = {"primaryMetrics": [], "secondaryMetrics": [], "otherMetrics": []}
    assert body["data"] in [{"ds": day, **empty} for day in days], body
    assert "No pulse results" in body["message"]
    status, body = fns["results"]("GET", PATH.format(exp["id"]), query="control=ctl&test=t1&date=2026-01-01")
    assert status == 200 and body["data"] == {"ds": "2026-01-01", **empty}, body
    assert "2026-01-01" in body["message"]


def _two_metric_values(rng: np.random.Generator, shift: float = 0.0) -> dict[str, dict[str, Any]]:
    return {
        m: {g: rng.poisson(5 + (shift if g != "ctl" else 0), 200).astype(float) for g in GROUPS}
        for m in ALL_METRICS
    }


def test_latest_day_is_the_default_and_date_selects(fns: dict[str, Caller]) -> None:
    exp = make_experiment(fns)
    rng = np.random.default_rng(1)
    early, late = _two_metric_values(rng), _two_metric_values(rng, 1.0)
    store(kinds.EXPERIMENT, exp["id"], "2026-03-01", early)
    store(kinds.EXPERIMENT, exp["id"], "2026-03-02", late)
    status, body = fns["results"]("GET", PATH.format(exp["id"]), query="control=ctl&test=t1")
    assert status == 200 and body["data"]["ds"] == "2026-03-02"
    first = body["data"]["primaryMetrics"][0]
    assert close(first["test_mean"], float(np.mean(late[PRIMARY[0]]["t1"])))
    status, body = fns["results"]("GET", PATH.format(exp["id"]), query="control=ctl&test=t1&date=2026-03-01")
    assert body["data"]["ds"] == "2026-03-01"
    assert close(body["data"]["primaryMetrics"][0]["test_mean"], float(np.mean(early[PRIMARY[0]]["t1"])))
    assert [d.ds for d in group_stats.days(kinds.EXPERIMENT, exp["id"])] == ["2026-03-01", "2026-03-02"]


def test_unset_options_default_to_the_experiments_settings(fns: dict[str, Caller]) -> None:
    exp = make_experiment(fns, defaultConfidenceInterval="80", bonferroniCorrection=True)
    store(kinds.EXPERIMENT, exp["id"], "2026-03-01", _two_metric_values(np.random.default_rng(2)))
    path = PATH.format(exp["id"])
    _, body = fns["results"]("GET", path, query="control=ctl&test=t1&cuped=false")
    entry = body["data"]["primaryMetrics"][0]
    assert close(entry["adjustedAlpha"], 0.2 / 2)  # two test groups
    _, body = fns["results"]("GET", path, query="control=ctl&test=t1&applyBonferroniPerVariant=false")
    assert close(body["data"]["primaryMetrics"][0]["adjustedAlpha"], 0.2)
    _, body = fns["results"]("GET", path, query="control=ctl&test=t1&confidence=90")
    assert close(body["data"]["primaryMetrics"][0]["adjustedAlpha"], 0.1 / 2)
    assert body["data"]["otherMetrics"][0]["adjustedAlpha"] == pytest.approx(0.1)


def test_disabled_groups_do_not_count_as_variants(fns: dict[str, Caller]) -> None:
    exp = make_experiment(fns, bonferroniCorrection=True)
    store(kinds.EXPERIMENT, exp["id"], "2026-03-01", _two_metric_values(np.random.default_rng(3)))
    status, _ = fns["experiments"](
        "POST", f"/console/v1/experiments/{exp['id']}/disable_groups", {"group_names": ["Test two"]}
    )
    assert status == 200
    _, body = fns["results"]("GET", PATH.format(exp["id"]), query="control=ctl&test=t1")
    assert close(body["data"]["primaryMetrics"][0]["adjustedAlpha"], 0.05)
    # the disabled group can still be asked for: it counts itself
    _, body = fns["results"]("GET", PATH.format(exp["id"]), query="control=ctl&test=t2")
    assert close(body["data"]["primaryMetrics"][0]["adjustedAlpha"], 0.025)


def test_sequential_testing_widens_intervals_before_the_planned_end(fns: dict[str, Caller]) -> None:
    exp = make_experiment(fns, sequentialTesting=True, duration=14)
    status, _ = fns["experiments"]("PUT", f"/console/v1/experiments/{exp['id']}/start")
    assert status == 200
    today = dt.datetime.now(dt.UTC).date()
    store(kinds.EXPERIMENT, exp["id"], today.isoformat(), _two_metric_values(np.random.default_rng(4)))
    _, body = fns["results"]("GET", PATH.format(exp["id"]), query="control=ctl&test=t1&cuped=false")
    e = body["data"]["primaryMetrics"][0]
    assert e["percent_sequential_testing_confidence_interval_delta"] > e["percent_confidence_interval_delta"]
    # a result day past the planned end: sequential equals fixed-horizon
    later = (today + dt.timedelta(days=30)).isoformat()
    store(kinds.EXPERIMENT, exp["id"], later, _two_metric_values(np.random.default_rng(4)))
    _, body = fns["results"](
        "GET", PATH.format(exp["id"]), query=f"control=ctl&test=t1&cuped=false&date={later}"
    )
    e = body["data"]["primaryMetrics"][0]
    assert e["percent_sequential_testing_confidence_interval_delta"] == e["percent_confidence_interval_delta"]
    assert e["sequentialTestingPValue"] == e["p_value"]


def test_bayesian_fields_with_a_flat_prior(fns: dict[str, Caller]) -> None:
    exp = make_experiment(fns, analyticsType="bayesian")
    values = _two_metric_values(np.random.default_rng(5), 0.3)
    store(kinds.EXPERIMENT, exp["id"], "2026-03-01", values)
    _, body = fns["results"]("GET", PATH.format(exp["id"]), query="control=ctl&test=t1&cuped=false")
    e = body["data"]["primaryMetrics"][0]
    arr = {g: np.asarray(v) for g, v in values[PRIMARY[0]].items()}
    ref = reference(arr["t1"], arr["ctl"], 0.05)
    assert close(e["chanceToBeatControl"], float(sps.norm.cdf(ref["value"] / math.sqrt(ref["V"]))))
    assert close(e["posteriorMean"], ref["value"])


def test_sprt_fields(fns: dict[str, Caller]) -> None:
    exp = make_experiment(
        fns,
        analyticsType="sprt",
        sprtBaselineMode="in_experiment_control",
        defaultSPRTMDE=5,
        defaultSPRTPowerParam=80,
    )
    store(kinds.EXPERIMENT, exp["id"], "2026-03-01", _two_metric_values(np.random.default_rng(6), 2.0))
    status, body = fns["results"]("GET", PATH.format(exp["id"]), query="control=ctl&test=t1")
    assert status == 200, body
    e = body["data"]["primaryMetrics"][0]
    assert e["sprtDecision"] in ("accept_alternative", "accept_null", "continue")
    assert close(e["sprtMDE"], 0.05 * e["control_mean"])
    assert close(e["sprtUpperBoundary"], math.log(0.8 / 0.05))


def test_cuped_switch(fns: dict[str, Caller]) -> None:
    exp = make_experiment(fns)
    rng = np.random.default_rng(7)
    values: dict[str, dict[str, Any]] = {}
    for m in ALL_METRICS:
        values[m] = {}
        for g in GROUPS:
            p = rng.poisson(5, 400).astype(float)
            values[m][g] = (p + rng.normal(0, 1, 400) + (0.2 if g != "ctl" else 0), p)
    store(kinds.EXPERIMENT, exp["id"], "2026-03-01", values, cuped=True)
    path = PATH.format(exp["id"])
    _, on = fns["results"]("GET", path, query="control=ctl&test=t1")
    _, off = fns["results"]("GET", path, query="control=ctl&test=t1&cuped=false")
    a, b = on["data"]["primaryMetrics"][0], off["data"]["primaryMetrics"][0]
    assert a["test_mean"] == b["test_mean"]  # raw means either way
    assert a["confidence_interval_delta"] < b["confidence_interval_delta"] / 2
    x_t, x_c = values[PRIMARY[0]]["t1"][0], values[PRIMARY[0]]["ctl"][0]
    assert close(b["value"], float(np.mean(x_t) - np.mean(x_c)))


# --- holdouts ------------------------------------------------------------------------------------------


def test_holdout_results(fns: dict[str, Caller]) -> None:
    status, out = fns["holdouts"](
        "POST",
        "/console/v1/holdouts",
        {"name": "hold one", "passPercentage": 10, "monitoringMetrics": [_ref(PRIMARY[1])]},
    )
    assert status == 201, out
    hid = out["data"]["id"]
    before = _utc_today()
    status, body = fns["results"]("GET", f"/console/v1/holdouts/{hid}/pulse_results")
    days = {before, _utc_today()}  # ds is always a day, even before any load
    assert status == 200 and body["data"] in [{"ds": day, "monitoringMetrics": []} for day in days], body
    rng = np.random.default_rng(8)
    values = {
        m: {
            HOLDOUT_TEST_GROUP: rng.poisson(6, 900).astype(float),
            HOLDOUT_CONTROL_GROUP: rng.poisson(5, 100).astype(float),
        }
        for m in PRIMARY
    }
    store(kinds.HOLDOUT, hid, "2026-03-01", values)
    status, body = fns["results"](
        "GET", f"/console/v1/holdouts/{hid}/pulse_results", query="cuped=false&confidence=90"
    )
    assert status == 200, body
    data = body["data"]
    assert data["ds"] == "2026-03-01"
    assert [e["metricID"] for e in data["monitoringMetrics"]] == [PRIMARY[1], PRIMARY[0]]
    e = data["monitoringMetrics"][0]
    t, c = values[PRIMARY[1]][HOLDOUT_TEST_GROUP], values[PRIMARY[1]][HOLDOUT_CONTROL_GROUP]
    ref = reference(t, c, 0.1)
    assert close(e["absoluteChange"], ref["value"])
    assert close(e["confidenceIntervalDelta"], ref["confidence_interval_delta"])
    assert close(e["pValue"], ref["p_value"])
    assert close(e["absoluteToplineImpact"], ref["value"] * len(t))
    assert close(
        e["relativeToplineImpact"], 100 * ref["value"] * len(t) / (ref["control_mean"] * (len(t) + len(c)))
    )
    assert close(e["projectedAbsoluteToplineImpact"], ref["value"] * len(t) / 0.9)
    for field in (
        "metricName",
        "directionality",
        "sequentialTestingConfidenceInterval",
        "percentSequentialTestingConfidenceIntervalDelta",
        "reversePower",
        "projectedRelativeToplineImpactDelta",
        "adjustedAlpha",
    ):
        assert field in e
    status, body = fns["results"]("GET", f"/console/v1/holdouts/{hid}/pulse_results", query="confidence=100")
    assert status == 400 and "confidence" in body["message"]


def test_record_round_trip_and_validation(aws: None) -> None:
    stat = CupedStatistic.from_values([1.0, 2.0, 4.0], [0.0, 1.0, 3.0])
    rec = results_service.record_of(
        stat, kind="EXPERIMENT", entity_id="e", ds="2026-03-01", metric_id="m::sum", group_id="g"
    )
    assert results_service.statistic_of(rec) == stat
    group_stats.put_day("EXPERIMENT", "e", "2026-03-01", [rec], {"g": 3})
    assert group_stats.read_day("EXPERIMENT", "e", "2026-03-01") == [rec]
    day = group_stats.latest_day("EXPERIMENT", "e")
    assert day is not None and day.units == {"g": 3}
    with pytest.raises(ValueError, match="preNonzero"):
        rec.model_validate({**rec.model_dump(), "preNonzero": None})
    with pytest.raises(ValueError):
        rec.model_validate({**rec.model_dump(), "means": [1.0, float("nan")]})


DAYS_PATH = "/console/v1/experiments/{}/pulse_results/days"


def test_days_series_has_each_days_figures_as_pulse_results_answers_them(fns: dict[str, Caller]) -> None:
    exp = make_experiment(fns)
    rng = np.random.default_rng(7)
    stored = {ds: _two_metric_values(rng, shift) for ds, shift in (("2026-03-01", 0.0), ("2026-03-03", 1.5))}
    # a metric that only appears from the second day on
    stored["2026-03-03"]["late::event_count"] = {g: rng.poisson(3, 150).astype(float) for g in GROUPS}
    for ds, values in stored.items():
        store(kinds.EXPERIMENT, exp["id"], ds, values)
    query = "control=ctl&test=t2&confidence=90"
    status, body = fns["results"]("GET", DAYS_PATH.format(exp["id"]), query=query)
    assert status == 200, body
    series = body["data"]
    assert series["days"] == ["2026-03-01", "2026-03-03"]
    by_metric = {m["metricID"]: m for m in series["metrics"]}
    assert list(by_metric) == [*ALL_METRICS, "late::event_count"]
    assert [by_metric[m]["category"] for m in ALL_METRICS] == ["primary", "primary", "secondary", "other"]
    assert [p["ds"] for p in by_metric["late::event_count"]["points"]] == ["2026-03-03"]
    for ds, values in stored.items():
        for mid in ALL_METRICS:
            point = next(p for p in by_metric[mid]["points"] if p["ds"] == ds)
            ref = reference(values[mid]["t2"], values[mid]["ctl"], 0.10)
            assert close(point["percent_change"], ref["percent_change"])
            assert close(point["p_value"], ref["p_value"])
            half = ref["percent_confidence_interval_delta"]
            assert close(point["percent_confidence_interval"]["lower"], ref["percent_change"] - half)
            assert close(point["percent_confidence_interval"]["upper"], ref["percent_change"] + half)
            assert point["test_units"] == len(values[mid]["t2"])
        # and each day is what pulse_results answers for that date with the same options
        _, day = fns["results"]("GET", PATH.format(exp["id"]), query=f"{query}&date={ds}")
        entry = day["data"]["primaryMetrics"][0]
        point = next(p for p in by_metric[entry["metricID"]]["points"] if p["ds"] == ds)
        assert point["percent_confidence_interval"] == entry["percent_confidence_interval"]


def test_days_series_refuses_bad_groups_and_is_empty_before_a_load(fns: dict[str, Caller]) -> None:
    exp = make_experiment(fns)
    status, body = fns["results"]("GET", DAYS_PATH.format(exp["id"]), query="control=ctl&test=t1")
    assert status == 200 and body["data"] == {"days": [], "metrics": []}
    # control unset is the experiment's controlGroupID, as pulse_results takes it
    status, body = fns["results"]("GET", DAYS_PATH.format(exp["id"]), query="test=t1")
    assert status == 200 and body["data"] == {"days": [], "metrics": []}
    status, body = fns["results"]("GET", DAYS_PATH.format(exp["id"]), query="control=ctl&test=nope")
    assert status == 400 and body["errors"][0]["field"] == "test"
    status, body = fns["results"]("GET", DAYS_PATH.format(exp["id"]), query="control=ctl")
    assert status == 400 and any(e["field"] == "test" for e in body["errors"])
    status, body = fns["results"]("GET", DAYS_PATH.format("missing"), query="control=ctl&test=t1")
    assert status == 404
