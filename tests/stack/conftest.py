"""The built stack: `make build` from a clean copy of the tree, once per tree content, and a local
server that runs the built functions (`expconsole serve --build-dir`).

The build is slow (a minute or more: it downloads and unpacks numpy, scipy and DuckDB), so it is
cached in the system's temporary folder (one cache per checkout) under a hash of the tree: every
file `git ls-files` lists (tracked, and untracked but not ignored), path and content. The test
processes of a run, and later runs on an unchanged tree, share it; a lock makes the first one
build it while the others wait. The copy holds only those files, so nothing in the working
tree's .aws-sam, .venv or caches can make a build pass that would fail from a fresh clone.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from expconsole_tools.local.process import ServeProcess
from tests.e2e.conftest import api, server_api

__all__ = ["api", "server_api"]  # the e2e clients, on the built stack's `server` below

REPO = Path(__file__).resolve().parents[2]
# One cache per checkout: a run prunes its checkout's older builds, never another checkout's.
CACHE = Path(tempfile.gettempdir()) / f"expconsole-build-cache-{hashlib.sha256(bytes(REPO)).hexdigest()[:12]}"
BUILD_TIMEOUT_S = 1800


def _tree_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted(name for name in set(listed.split("\0")) if name and (REPO / name).is_file())


def _tree_key(files: list[str]) -> str:
    digest = hashlib.sha256()
    for name in files:
        digest.update(name.encode() + b"\0" + hashlib.sha256((REPO / name).read_bytes()).digest())
    return digest.hexdigest()[:20]


def _sam_venv() -> Path:
    sam = Path(os.environ["SAM_CLI"]) if os.environ.get("SAM_CLI") else REPO / ".venv-sam" / "bin" / "sam"
    if not sam.is_file():
        pytest.fail(f"sam CLI not found at {sam}: run `make install-sam`")
    return sam.parent.parent


def _build(files: list[str], target: Path) -> None:
    """`make build` in a fresh copy of `files`, writing the artifact to target/build."""
    source = target / "src"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for name in files:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    result = subprocess.run(
        ["make", "build", f"SAM_VENV={_sam_venv()}", f"BUILD_DIR={target / 'build'}"],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    shutil.rmtree(source, ignore_errors=True)
    if result.returncode != 0:
        log = "\n".join((result.stdout + result.stderr).splitlines()[-60:])
        failure = f"`make build` from a clean copy of the tree failed ({result.returncode}):\n{log}"
        (target / "failed").write_text(failure)


@pytest.fixture(scope="session")
def build_dir() -> Path:
    """The built stack (.aws-sam/build's equivalent) of the tree as it is now."""
    files = _tree_files()
    key = _tree_key(files)
    target = CACHE / key
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "built").is_file() and not (target / "failed").is_file():
            for stale in CACHE.iterdir():  # one cached build at a time: each is some 250 MB
                if stale.is_dir() and stale.name != key:
                    shutil.rmtree(stale, ignore_errors=True)
            _build(files, target)
            if not (target / "failed").is_file():
                (target / "built").touch()
    if (target / "failed").is_file():  # reported by every test that needs the build, built once
        pytest.fail((target / "failed").read_text())
    return target / "build"


@pytest.fixture(scope="session")
def server(build_dir: Path) -> Iterator[ServeProcess]:
    """A local server running the built functions (what `sam deploy` would ship)."""
    with ServeProcess(
        "--ephemeral", "--port", "0", "--no-warm", "--build-dir", str(build_dir), cwd=REPO
    ) as process:
        yield process
