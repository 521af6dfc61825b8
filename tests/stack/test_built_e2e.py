"""End-to-end tests of the source tree, run again against the built stack.

`server` here (tests/stack/conftest.py) is `expconsole serve --build-dir` on the cached build:
every function runs under python3.12 from its built code folder and its layers only. Between
them these tests create a gate, an experiment with metrics, ingest exposures and events through
the webhook and through the Statsig SDK (download_config_specs, log_event), then load_pulse and
pulse_results, compared with independent computations, and a load_pulse queued through
Lambda's Invoke API (the pulse function invoking itself with the runtime's boto3); a request
without the key header gets the built function's 401 naming it; a module a layer lacks fails
here.
"""

from __future__ import annotations

from tests.e2e.test_first_hour import (
    test_a_first_request_without_the_key_header_is_told_to_send_it,
    test_load_pulse_is_queued_as_in_aws_and_its_history_record_finishes,
)
from tests.e2e.test_pulse import test_pulse_results_equal_an_independent_computation
from tests.e2e.test_sdk_pulse import test_sdk_assignments_and_events_reach_pulse

__all__ = [
    "test_a_first_request_without_the_key_header_is_told_to_send_it",
    "test_load_pulse_is_queued_as_in_aws_and_its_history_record_finishes",
    "test_pulse_results_equal_an_independent_computation",
    "test_sdk_assignments_and_events_reach_pulse",
]
