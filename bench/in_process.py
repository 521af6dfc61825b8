"""What the benchmarks that run the services in their own process set up before importing them:
the repository's packages on the path, and moto's stand-in credentials and names, so that no
boto3 client ever reaches AWS (imported first, before anything imports boto3)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core")]
for _name, _value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "TABLE_NAME": "expconsole-bench",
    "EVENTS_BUCKET": "expconsole-bench-events",
    "POWERTOOLS_LOG_LEVEL": "ERROR",
}.items():
    os.environ[_name] = _value
os.environ.pop("AWS_ENDPOINT_URL", None)
