"""Sample ratio mismatch: chi-squared test of unit counts against the configured group sizes.

The check lives in `expconsole.srm` (pure Python with mpmath) so that the pulse function, which
writes the health checks, needs neither numpy nor scipy; it is re-exported here as part of the
statistics API.
"""

from __future__ import annotations

from expconsole.srm import SRM_FAIL_P, SRM_MIN_DEVIATION_PP, SRM_WARN_P, SrmResult, SrmStatus, srm_check

__all__ = ["SRM_FAIL_P", "SRM_MIN_DEVIATION_PP", "SRM_WARN_P", "SrmResult", "SrmStatus", "srm_check"]
