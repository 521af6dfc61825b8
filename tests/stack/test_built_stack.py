"""The stack as `sam deploy` would ship it: it builds from a clean copy of the tree (the
`build_dir` fixture fails on any build error) and every function fits Lambda's size limit.

Lambda refuses a function whose code and layers together exceed 250 MB (MiB) unzipped; 230 keeps
a margin for a dependency's next release. The size of every function is printed at the end of
the run (tests/conftest.py prints the `function sizes` property), pass or fail.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from expconsole_tools.local.artifact import function_sizes
from expconsole_tools.local.process import ServeProcess
from expconsole_tools.local.template import load_functions, read_template
from tests.e2e.client import ApiClient
from tests.e2e.conftest import REPO
from tests.unit.test_template_security import (
    functions_that_cannot_read_keys,
    gateway_authorizers,
    keyed_functions,
)

LIMIT_MIB = 230
MIB = 1024 * 1024
CRUD_LAYERS = {"CoreLayer"}
HEAVY_FUNCTIONS = {"ResultsFunction", "PulseFunction", "ImportFunction"}


def _table(sizes: dict[str, dict[str, int]]) -> str:
    lines = []
    for name, parts in sorted(sizes.items(), key=lambda item: -sum(item[1].values())):
        detail = " + ".join(f"{part} {size / MIB:.1f}" for part, size in parts.items())
        lines.append(f"{name:<26} {sum(parts.values()) / MIB:6.1f} MiB  ({detail})")
    return "\n".join(lines)


def test_every_function_with_its_layers_fits_lambdas_limit(
    build_dir: Path, record_property: pytest.RecordProperty
) -> None:
    sizes = function_sizes(build_dir)
    table = _table(sizes)
    record_property("function sizes", f"unzipped, limit {LIMIT_MIB} MiB:\n{table}")
    functions = load_functions(build_dir / "template.yaml")
    assert set(sizes) == set(functions) and len(sizes) > 1, sorted(sizes)
    too_big = [name for name, parts in sizes.items() if sum(parts.values()) > LIMIT_MIB * MIB]
    assert not too_big, f"over {LIMIT_MIB} MiB unzipped: {too_big}\n{table}"


def test_crud_functions_carry_the_core_layer_only(build_dir: Path) -> None:
    for name, function in load_functions(build_dir / "template.yaml").items():
        layers = {layer.name for layer in function.layers}
        if name in HEAVY_FUNCTIONS:
            assert "CoreLayer" in layers and layers - CRUD_LAYERS, (name, layers)
        else:
            assert layers == CRUD_LAYERS, f"{name} carries {sorted(layers)}"


def test_layers_hold_packages_for_the_functions_runtime(build_dir: Path) -> None:
    """Each built layer has its packages under python/ (where Lambda looks), and compiled ones are
    CPython 3.12 x86_64 builds: a wheel for another interpreter would fail only in AWS."""
    for name in ("CoreLayer", "NumericLayer", "SqlLayer"):
        python = build_dir / name / "python"
        assert python.is_dir(), f"{name} has no python/ folder"
        extensions = [p.name for p in python.rglob("*.so") if ".cpython-" in p.name]
        wrong = [e for e in extensions if "cpython-312-x86_64-linux-gnu" not in e]
        assert not wrong, f"{name}: {wrong[:5]}"
    assert not list((build_dir / "NumericLayer" / "python").glob("*/tests")), "test suites are trimmed"
    assert (build_dir / "SqlLayer" / "python" / "duckdb").is_dir()


def test_functions_ship_their_bytecode(build_dir: Path) -> None:
    """Lambda's /var/task is read-only: a function folder without its .pyc files compiles its code
    at every cold start (`make build` compiles them after `sam build`, which copies sources only)."""
    for name, function in load_functions(build_dir / "template.yaml").items():
        folder = function.module_file.parent
        missing = [
            source.name
            for source in folder.rglob("*.py")
            if not (source.parent / "__pycache__" / f"{source.stem}.cpython-312.pyc").is_file()
        ]
        assert not missing, f"{name}: no bytecode for {missing}"


def test_the_built_api_runs_no_authorizer_and_every_keyed_function_can_read_keys(build_dir: Path) -> None:
    """The template `sam deploy` ships: API Gateway has no authorizer, so no route can be answered
    with its bare `401 {"message": "Unauthorized"}` before the function names the header, and every
    function that checks keys may read the key item (`dynamodb:GetItem` on the table)."""
    built = read_template(build_dir / "template.yaml")
    assert gateway_authorizers(built) == []
    assert keyed_functions(built) == keyed_functions(read_template(REPO / "template.yaml"))
    assert not functions_that_cannot_read_keys(built)


TOOLING = ("cli", "local", "convert", "importer", "openapi")


def _folder_mib(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / MIB


def test_the_core_layer_ships_the_runtime_package_without_the_tooling(
    build_dir: Path, record_property: pytest.RecordProperty
) -> None:
    """What Lambda imports, and nothing only a laptop runs: the CLI, the local server (with its moto
    patches), the converters and the OpenAPI generator live in expconsole_tools, outside the layer."""
    python = build_dir / "CoreLayer" / "python"
    package = python / "expconsole"
    shipped = sorted(p.name.removesuffix(".py") for p in package.iterdir() if p.name != "__pycache__")
    sizes = f"{_folder_mib(python):.1f} MiB unzipped, expconsole {_folder_mib(package):.1f} MiB"
    record_property("core layer", f"{sizes}: {', '.join(shipped)}")
    assert {"api", "services", "store", "models", "observability"} <= set(shipped)
    assert not (python / "expconsole_tools").exists()
    assert not [name for name in TOOLING if name in shipped], shipped
    assert not (python / "moto").exists() and not (python / "yaml").exists()


def test_a_module_missing_from_a_layer_fails_its_function(build_dir: Path, tmp_path: Path) -> None:
    """The built functions see their own folders only: with Powertools taken out of a copy of the
    core layer, a gates request is API Gateway's 500 and the log names the missing module, though
    the server's virtualenv and the repository both have it (pure Python, importable by 3.12)."""
    build = tmp_path / "build"
    build.mkdir()
    for entry in build_dir.iterdir():
        if entry.name == "CoreLayer":
            shutil.copytree(entry, build / entry.name, ignore=shutil.ignore_patterns("aws_lambda_powertools"))
        elif entry.is_dir() and entry.name.endswith("Function"):
            shutil.copytree(entry, build / entry.name)
        else:
            (build / entry.name).symlink_to(entry)
    log = tmp_path / "serve.log"
    with (
        ServeProcess(
            "--ephemeral", "--port", "0", "--no-warm", "--build-dir", str(build), cwd=REPO, stderr=log
        ) as server,
        ApiClient(server.url, server.api_key) as api,
    ):
        response = api.get("/console/v1/gates")
    assert response.status_code == 500 and response.json() == {"message": "Internal Server Error"}
    assert "No module named 'aws_lambda_powertools'" in log.read_text()
