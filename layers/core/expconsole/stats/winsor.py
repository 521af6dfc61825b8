"""Winsorization of sum and count metrics at the 99.9th percentile of the non-zero unit values.

The threshold is numpy's default (linear) percentile of the non-zero values, pooled over the
analysed groups by the caller; only values above it are capped (zeros, the common case of
count metrics, do not drag the threshold down).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["WINSOR_PERCENTILE", "winsorization_threshold", "winsorize"]

WINSOR_PERCENTILE = 99.9


def winsorization_threshold(values: ArrayLike, percentile: float = WINSOR_PERCENTILE) -> float | None:
    """The linear `percentile` of the non-zero finite values; None when there are none."""
    arr = np.asarray(values, dtype=float).ravel()
    nonzero = arr[(arr != 0) & np.isfinite(arr)]
    if nonzero.size == 0:
        return None
    return float(np.percentile(nonzero, percentile))


def winsorize(
    values: ArrayLike, threshold: float | None = None, percentile: float = WINSOR_PERCENTILE
) -> tuple[np.ndarray, float | None]:
    """Values capped at the threshold (computed from them when not given) and the threshold used."""
    arr = np.asarray(values, dtype=float)
    if threshold is None:
        threshold = winsorization_threshold(arr, percentile)
    if threshold is None:
        return arr.copy(), None
    return np.minimum(arr, threshold), threshold
