"""A queued load's history record while it runs (services.pulse_loads): what the pipeline's progress
writes into it, read back through the load history's store, as the API answers it."""

from __future__ import annotations

import json

import pytest

from expconsole import kinds
from expconsole.models.pulse import PulseLoadRecord
from expconsole.services import pulse_loads
from expconsole.store import pulse_runs

QUEUED = {
    "creatorName": "Console API (k1)",
    "createdTime": 1_773_100_000_000,
    "finishedTime": None,
    "finishedState": None,
    "startDs": "2026-03-01",
    "endDs": "2026-03-10",
    "reloadType": "full",
    "turboMode": False,
}
JOB = {"kind": kinds.EXPERIMENT, "id": "exp", "runID": "r1", "createdTime": QUEUED["createdTime"]}


def test_progress_is_written_into_the_queued_record_and_answered_while_it_runs(
    aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The job as the queued invocation's payload carries it (JSON), an older key order included.
    record = json.loads(json.dumps({"turboMode": False, **QUEUED}))
    progress = pulse_loads._progress_writer({**JOB, "record": record})
    assert progress is not None
    clock = iter([100.0, 100.5, 101.0])
    monkeypatch.setattr(pulse_loads.time, "monotonic", lambda: next(clock))

    progress("events 2026-03-01", 0, 20)
    progress("events 2026-03-02", 1, 20)  # within a second of the last write: skipped
    progress("done", 1, 1)  # the last step is always written

    [stored] = pulse_runs.list_runs(kinds.EXPERIMENT, "exp")
    assert list(stored.items()) == [*record.items(), ("progress", {"step": "done", "done": 1, "total": 1})]
    answered = PulseLoadRecord.read(stored).presented()
    assert list(answered.items()) == [*stored.items(), ("running", True)]


def test_a_job_without_a_queued_record_writes_no_progress() -> None:
    assert pulse_loads._progress_writer(dict(JOB)) is None
