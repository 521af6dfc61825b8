"""expconsole.lazy.lazy_import: a module named at import runs its code at the first attribute read."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from expconsole.lazy import lazy_import


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A package with a module that records its own execution, and one that fails."""
    root = tmp_path / "lazypkg_under_test"
    root.mkdir()
    (root / "__init__.py").write_text("runs = []\n")
    (root / "heavy.py").write_text(
        "import lazypkg_under_test as parent\nparent.runs.append('heavy')\nclass Model:\n    pass\n"
    )
    (root / "broken.py").write_text("raise RuntimeError('broken at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "lazypkg_under_test"
    for name in [n for n in sys.modules if n.startswith("lazypkg_under_test")]:
        del sys.modules[name]


def test_the_module_runs_at_the_first_attribute_read_and_once(package: str) -> None:
    parent = __import__(package)
    heavy = lazy_import(f"{package}.heavy")
    assert parent.runs == []
    assert heavy.Model.__name__ == "Model"
    assert parent.runs == ["heavy"]
    assert heavy.Model is heavy.Model and parent.runs == ["heavy"]


def test_an_imported_module_is_returned_as_it_is(package: str) -> None:
    parent = __import__(package)
    first = lazy_import(f"{package}.heavy")
    assert lazy_import(f"{package}.heavy") is first
    from lazypkg_under_test import heavy  # type: ignore[import-not-found]

    assert heavy.Model is first.Model and parent.runs == ["heavy"]


def test_a_missing_module_fails_at_once(package: str) -> None:
    with pytest.raises(ModuleNotFoundError, match="nothing_here"):
        lazy_import(f"{package}.nothing_here")


def test_a_module_that_fails_fails_at_the_first_read_with_its_own_error(package: str) -> None:
    broken = lazy_import(f"{package}.broken")
    with pytest.raises(RuntimeError, match="broken at import"):
        _ = broken.anything
