"""The committed openapi.json is what `make openapi` generates, and it covers every route."""

from __future__ import annotations

import json
import re
from pathlib import Path

from expconsole_tools.openapi import examples_of, render

ROOT = Path(__file__).resolve().parents[2]


def test_committed_openapi_is_current() -> None:
    committed = (ROOT / "openapi.json").read_text()
    assert committed == render(ROOT), "openapi.json is stale: run `make openapi` and commit it"


def test_every_template_route_is_documented_with_request_and_response_schemas() -> None:
    template = (ROOT / "template.yaml").read_text()
    routes = re.findall(r"Method: (\w+)\n\s+Path: (/console/v1/\S+)", template)
    assert routes, "no console routes found in template.yaml"
    doc = json.loads((ROOT / "openapi.json").read_text())
    for method, path in routes:
        operation = doc["paths"].get(path, {}).get(method.lower())
        assert operation is not None, f"{method} {path} is not in openapi.json"
        success = [code for code in operation["responses"] if code.startswith("2")]
        assert success, f"{method} {path} documents no success response"
        assert "content" in operation["responses"][success[0]], f"{method} {path}: no response schema"
        assert "422" not in operation["responses"], "validation errors are 400s, never 422"
        if method in ("POST", "PATCH"):
            assert "requestBody" in operation, f"{method} {path} documents no request body"


def test_the_docs_function_serves_the_committed_document() -> None:
    """functions/docs/ is the docs function's whole package in AWS, so it carries a copy."""
    served = (ROOT / "functions" / "docs" / "openapi.json").read_text()
    assert served == (ROOT / "openapi.json").read_text(), "run `make openapi` (it writes both)"


def test_every_request_body_has_an_example_valid_against_its_schema() -> None:
    """Each comes from its model (`json_schema_extra`); tests/functional/test_openapi_examples.py
    sends them all and expects success."""
    import jsonschema

    doc = json.loads((ROOT / "openapi.json").read_text())
    bodies = 0
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            content = (operation.get("requestBody") or {}).get("content", {}).get("application/json")
            if content is None:
                continue
            bodies += 1
            examples = examples_of(content)
            assert examples, f"{method.upper()} {path}: no example: declare one on its request model"
            schema = {**content["schema"], "components": doc["components"]}
            for name, example in examples:
                try:
                    jsonschema.validate(example, schema)
                except jsonschema.ValidationError as exc:
                    raise AssertionError(f"{method.upper()} {path} {name}: {exc.message}") from None
    assert bodies > 60
