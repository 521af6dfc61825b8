"""Finding the functions' runtime for `make build` and `expconsole serve --build-dir`: a missing
or wrong interpreter is a clear error naming what to install or set, never a build for another
Python that fails only in AWS."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from expconsole_tools.local.artifact import PYTHON_VARIABLE, ArtifactError, find_python, open_artifact

ROOT = Path(__file__).resolve().parents[2]


def _version(executable: str) -> str:
    return subprocess.run(
        [executable, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_finds_a_working_python312_and_skips_one_of_another_version(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A working interpreter of another version (it runs, and answers 3.11 to the version probe),
    # whatever version runs the suite.
    other = tmp_path / "python3.11"
    other.write_text("#!/bin/sh\necho 3.11\n")
    other.chmod(0o755)
    assert _version(str(other)) == "3.11"
    monkeypatch.setenv(PYTHON_VARIABLE, str(other))
    assert _version(find_python("python3.12")) == "3.12"


def test_no_python312_is_an_error_saying_what_to_do(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(PYTHON_VARIABLE, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    with pytest.raises(
        ArtifactError, match=rf"no working python3\.12 .*{PYTHON_VARIABLE}=/path/to/python3\.12"
    ):
        find_python("python3.12")


def test_a_folder_that_is_not_a_build_says_to_run_make_build(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match=r"holds no template\.yaml: run `make build`"):
        open_artifact(tmp_path, {"python3.12"})
    (tmp_path / "template.yaml").write_text("Resources: {}\n")
    with pytest.raises(ArtifactError, match="no lambda-runtime/"):
        open_artifact(tmp_path, {"python3.12"})


def test_make_build_without_the_runtime_fails_before_building(tmp_path: Path) -> None:
    sam_venv = Path(os.environ.get("SAM_CLI", ROOT / ".venv-sam" / "bin" / "sam")).parent.parent
    if not (sam_venv / ".installed").is_file():
        pytest.fail(f"{sam_venv} is not installed: run `make install-sam`")
    result = subprocess.run(
        ["make", "build", "LAMBDA_PYTHON=", f"SAM_VENV={sam_venv}", f"BUILD_DIR={tmp_path / 'build'}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "no working python3.12" in result.stderr and "LAMBDA_PYTHON=" in result.stderr, result.stderr
    assert not (tmp_path / "build").exists()


def test_a_template_and_a_build_folder_together_are_refused(tmp_path: Path) -> None:
    from expconsole_tools.local.backend import LocalError
    from expconsole_tools.local.server import LocalServer

    server = LocalServer(template=ROOT / "template.yaml", build_dir=tmp_path)
    with pytest.raises(LocalError, match="not both"):
        server.start()
