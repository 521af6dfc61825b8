"""The built stack (`make build`, i.e. `sam build`) as the local server runs it: each function
imported the way Lambda imports it.

Lambda's Python runtime starts the function with its code folder first on sys.path, then its
layers' `python/` folders (unpacked into /opt), then the standard library and the packages the
runtime itself brings (boto3, in /var/runtime). A sandbox of a built function gets that and only
that: the runtime's interpreter (python3.12: the layers hold cp312 wheels), started isolated and
without site-packages, with the function's folder, its layers' `python/` folders and
`lambda-runtime/` (boto3, installed there by `make build`) on its path. Nothing comes from the
repository or the server's virtualenv, so a module a package lacks fails here as in AWS.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from expconsole_tools.local.template import Function, TemplateError, load_functions

BUILT_TEMPLATE = "template.yaml"
RUNTIME_DIR = "lambda-runtime"
# `make build LAMBDA_PYTHON=...` and `expconsole serve --build-dir` choose the interpreter alike.
PYTHON_VARIABLE = "LAMBDA_PYTHON"


class ArtifactError(TemplateError):
    """The build folder or the runtime's interpreter is missing or unusable."""


@dataclass(frozen=True)
class Artifact:
    """A build folder and the interpreter of its functions' runtime."""

    build_dir: Path
    python: str

    @property
    def template(self) -> Path:
        return self.build_dir / BUILT_TEMPLATE

    def import_path(self, function: Function) -> tuple[list[str], list[str]]:
        """The folders a sandbox puts before the standard library, and those after it.

        Before: the function's code, then its layers' `python/` folders, the last layer first (in
        /opt a later layer's files overwrite an earlier one's). After: the runtime's packages.
        """
        layers = [str(folder / "python") for folder in reversed(function.layers)]
        return [str(function.module_file.parent), *layers], [str(self.build_dir / RUNTIME_DIR)]

    def environment(self, function: Function) -> dict[str, str]:
        """Variables Lambda's runtime sets that change what the code imports: LAMBDA_TASK_ROOT turns
        Powertools' Tracer on (it imports the X-Ray SDK and patches botocore, as in AWS); with no
        X-Ray daemon and no trace header here, a missing trace context is ignored, not logged."""
        return {
            "LAMBDA_TASK_ROOT": str(function.module_file.parent),
            "AWS_XRAY_CONTEXT_MISSING": "IGNORE_ERROR",
        }


def open_artifact(build_dir: str | Path, runtimes: set[str]) -> Artifact:
    """The artifact in `build_dir`, for functions of the given runtimes (exactly one, python3.X)."""
    folder = built_template(build_dir).parent
    if not (folder / RUNTIME_DIR).is_dir():
        raise ArtifactError(f"{folder} has no {RUNTIME_DIR}/ (the runtime's boto3): run `make build`")
    if len(runtimes) != 1:
        raise ArtifactError(f"the built functions must share one runtime, not {sorted(runtimes)}")
    return Artifact(folder, find_python(next(iter(runtimes))))


def built_template(build_dir: str | Path) -> Path:
    """The template `sam build` wrote into `build_dir` (its CodeUri and ContentUri point at the build)."""
    path = Path(build_dir).resolve() / BUILT_TEMPLATE
    if not path.is_file():
        raise ArtifactError(f"{path.parent} holds no {BUILT_TEMPLATE}: run `make build` first")
    return path


def function_sizes(build_dir: str | Path) -> dict[str, dict[str, int]]:
    """Each built function's unzipped bytes, as Lambda counts them against its 250 MB limit: its
    code folder (`code`) and each of its layers (by logical id)."""
    sizes: dict[str, dict[str, int]] = {}
    for logical_id, function in load_functions(built_template(build_dir)).items():
        parts = {"code": _folder_bytes(function.module_file.parent)}
        parts.update({layer.name: _folder_bytes(layer) for layer in function.layers})
        sizes[logical_id] = parts
    return sizes


def _folder_bytes(folder: Path) -> int:
    if not folder.is_dir():
        raise ArtifactError(f"{folder} is missing from the build")
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def find_python(runtime: str) -> str:
    """An interpreter of Lambda runtime `runtime` (python3.12) that runs: $LAMBDA_PYTHON, the one
    on PATH, else pyenv's (whose shims fail for a version that is not selected)."""
    if not runtime.startswith("python3."):
        raise ArtifactError(f"runtime {runtime!r} is not a Python runtime the local server runs")
    version = runtime.removeprefix("python")
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates = [os.environ.get(PYTHON_VARIABLE) or "", shutil.which(runtime) or ""]
    pyenv = glob.glob(os.path.join(root, "versions", f"{version}*", "bin", runtime))
    candidates += sorted(pyenv, reverse=True)
    for candidate in filter(None, candidates):
        if _runs_version(candidate, version):
            return candidate
    raise ArtifactError(
        f"no working {runtime} (the functions' runtime) on PATH or in pyenv; install CPython {version} "
        f"or set {PYTHON_VARIABLE}=/path/to/{runtime}"
    )


def _runs_version(executable: str, version: str) -> bool:
    try:
        result = subprocess.run(
            [executable, "-I", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 0 and result.stdout.strip() == version
