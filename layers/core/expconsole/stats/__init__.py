# ruff: noqa: RUF002 - formulas keep their own notation (Greek letters, minus signs)
"""Statistics of pulse results (docs/statistics.md), as pure functions of sufficient statistics.

Each statistic is a small immutable object (`moments`) stored in a numerically stable form:
n, means and centred co-moments, merged across days with Chan et al.'s update; raw sums
convert both ways. Each test is a function of those objects: `frequentist`, `cuped`,
`sequential`, `bayesian`, `sprt`, with `corrections` deciding the α of each entry, `holdout` the
topline figures and `winsor` the capping of unit values. `result` assembles contract-shaped
entries. Undefined figures are None with a reason; nothing raises on data, divides by zero or
returns NaN. Only numpy and scipy are used. The sample ratio check is `expconsole.srm` (pure
Python with mpmath), outside this package: the pulse function, which runs it, has no scipy.
"""

from __future__ import annotations

from .bayesian import BayesianPrior, BayesianResult, bayesian_test
from .corrections import (
    Category,
    CorrectionEntry,
    CorrectionFlags,
    adjusted_alphas,
    benjamini_hochberg_alpha,
    primary_metric_weight,
)
from .cuped import CupedResult, adjusted_summary, cuped_adjust, pooled_theta
from .frequentist import (
    FrequentistResult,
    PercentInterval,
    critical_value,
    fieller_interval,
    frequentist_test,
    percent_interval,
    welch_dof,
)
from .holdout import ToplineImpact, minimum_detectable_effect, reverse_power, topline_impact
from .moments import (
    CupedRatioStatistic,
    CupedStatistic,
    GroupSummary,
    Moments,
    RatioStatistic,
    SampleMeanStatistic,
    Statistic,
    merge,
    merge_all,
)
from .result import (
    ExperimentResult,
    HoldoutResult,
    ResultOptions,
    ScorecardRow,
    compute_scorecard,
    experiment_result,
    holdout_result,
)
from .sequential import SequentialResult, is_sequential_period, msprt_critical, sequential_test
from .sprt import SprtResult, SprtSettings, sprt_test
from .winsor import winsorization_threshold, winsorize

__all__ = [
    "BayesianPrior",
    "BayesianResult",
    "Category",
    "CorrectionEntry",
    "CorrectionFlags",
    "CupedRatioStatistic",
    "CupedResult",
    "CupedStatistic",
    "ExperimentResult",
    "FrequentistResult",
    "GroupSummary",
    "HoldoutResult",
    "Moments",
    "PercentInterval",
    "RatioStatistic",
    "ResultOptions",
    "SampleMeanStatistic",
    "ScorecardRow",
    "SequentialResult",
    "SprtResult",
    "SprtSettings",
    "Statistic",
    "ToplineImpact",
    "adjusted_alphas",
    "adjusted_summary",
    "bayesian_test",
    "benjamini_hochberg_alpha",
    "compute_scorecard",
    "critical_value",
    "cuped_adjust",
    "experiment_result",
    "fieller_interval",
    "frequentist_test",
    "holdout_result",
    "is_sequential_period",
    "merge",
    "merge_all",
    "minimum_detectable_effect",
    "msprt_critical",
    "percent_interval",
    "pooled_theta",
    "primary_metric_weight",
    "reverse_power",
    "sequential_test",
    "sprt_test",
    "topline_impact",
    "welch_dof",
    "winsorization_threshold",
    "winsorize",
]
