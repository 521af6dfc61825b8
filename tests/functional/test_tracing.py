"""X-Ray tracing in Lambda: AWS calls are traced, and the patch costs nothing until a client exists.

Runs in fresh interpreters: Powertools' Tracer is process-wide state, on only when the Lambda
runtime's variables say so (LAMBDA_TASK_ROOT), and these tests need it on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LAMBDA_ENV = {
    "LAMBDA_TASK_ROOT": str(ROOT / "functions"),
    "AWS_LAMBDA_FUNCTION_NAME": "expconsole-test",
    "AWS_XRAY_CONTEXT_MISSING": "IGNORE_ERROR",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "TABLE_NAME": "expconsole-test",
    "EVENTS_BUCKET": "expconsole-test-events",
}


def _run(code: str, function: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_TRACE", "AWS_ENDPOINT"))}
    env.update(LAMBDA_ENV)
    result = subprocess.run(
        [
            sys.executable,
            "-P",
            "-c",
            f"import sys; sys.path.insert(0, {str(ROOT / 'functions' / function)!r})\n{code}",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


PATCHED = "hasattr(__import__('botocore.client').client.BaseClient._make_api_call, '__wrapped__')"


def test_aws_calls_are_traced_once_a_client_exists() -> None:
    code = f"""
import json, sys
import app
from expconsole import aws
before = 'botocore.client' in sys.modules
aws.client("dynamodb")
print(json.dumps({{"loaded_before": before, "patched": {PATCHED}}}))
"""
    seen = _run(code, "gates")
    assert seen == {"loaded_before": False, "patched": True}


def test_a_function_that_never_calls_aws_does_not_load_the_patch() -> None:
    code = """
import json, sys
import app
print(json.dumps({"xray_botocore": "aws_xray_sdk.ext.botocore" in sys.modules,
                  "botocore_client": "botocore.client" in sys.modules}))
"""
    assert _run(code, "web") == {"xray_botocore": False, "botocore_client": False}
