"""The pulse function runs without numpy or scipy: it ships with DuckDB in Lambda's 250 MB.

A fresh interpreter (so that nothing the test run imported counts) imports functions/pulse/app.py,
creates metrics of every type and an experiment through the handlers on moto, ingests events
and loads pulse through the function (`?wait=true`); then neither numpy, scipy nor pyarrow is in
`sys.modules`, and the load wrote records and a sample ratio check with a p-value (mpmath).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.functional.pulse_metrics import METRICS

ROOT = Path(__file__).resolve().parents[2]
MOTO_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "TABLE_NAME": "expconsole-imports",
    "EVENTS_BUCKET": "expconsole-imports-events",
    "POWERTOOLS_LOG_LEVEL": "ERROR",
}


def test_a_pulse_load_imports_neither_numpy_nor_scipy() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.functional.pulse_load_process"],
        cwd=ROOT,
        env={**{k: v for k, v in os.environ.items() if k != "AWS_ENDPOINT_URL"}, **MOTO_ENV},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))
    result = json.loads(line.removeprefix("RESULT "))
    assert result["modules"] == []
    assert result["duckdb"]  # the load did run the SQL engine in this process
    assert len(result["records"]) == len(METRICS)
    assert 0.0 <= result["srm_p"] <= 1.0
