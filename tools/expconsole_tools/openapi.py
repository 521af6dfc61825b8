"""Generate the OpenAPI document from the functions' routers and our pydantic models.

`make openapi` writes it to openapi.json; a test fails when the committed copy is stale.
Every `functions/<group>/app.py` that declares a module-level `router` contributes its routes.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.openapi.models import APIKey, APIKeyIn, Server
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from expconsole import __version__

TITLE = "Experimentation Console API"
DESCRIPTION = (
    "Manage experiments, feature gates, dynamic configs, holdouts, release pipelines, metrics, "
    "prompts and warehouse sources; send events; read experiment results. Every console route "
    "requires a console key in the SERVICE-API-KEY header; ingestion requires a server secret."
)


def repo_root(start: Path | None = None) -> Path:
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "template.yaml").exists() and (candidate / "functions").is_dir():
            return candidate
    raise SystemExit("template.yaml not found: run from the repository")


def function_routers(root: Path) -> list[tuple[str, APIGatewayHttpRouter]]:
    """Each function's router, imported by file path (every function's module is `app.py`)."""
    out = []
    for path in sorted(root.glob("functions/*/app.py")):
        name = f"expconsole_openapi_{path.parent.name}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        router = getattr(module, "router", None)
        if isinstance(router, APIGatewayHttpRouter):
            out.append((path.parent.name, router))
    return out


def document(root: Path | None = None) -> dict[str, Any]:
    app = APIGatewayHttpResolver(enable_validation=True)
    for _, router in function_routers(root or repo_root()):
        app.include_router(router)
    schema = app.get_openapi_json_schema(
        title=TITLE,
        version=__version__,
        description=DESCRIPTION,
        servers=[Server(url="http://127.0.0.1:3000", description="expconsole serve")],
        security_schemes={"apiKey": APIKey(name="SERVICE-API-KEY", in_=APIKeyIn.header)},
        security=[{"apiKey": []}],
    )
    return _with_examples(_raw_request_bodies(_without_422(json.loads(schema))))


def _raw_request_bodies(doc: dict[str, Any]) -> dict[str, Any]:
    """Document the bodies of routes that read them raw (ingestion: its own fast validator).

    Such a route names its body model in `x-request-body-model` (`module:Class`) rather than
    taking a pydantic parameter, so the function neither validates twice nor builds the schema
    at import; the model becomes the operation's JSON request body here.
    """
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for operations in doc.get("paths", {}).values():
        for operation in operations.values():
            target = operation.pop("x-request-body-model", None)
            if not target:
                continue
            module, _, name = target.partition(":")
            model = getattr(importlib.import_module(module), name)
            schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
            for def_name, definition in schema.pop("$defs", {}).items():
                schemas.setdefault(def_name, definition)
            schemas[name] = schema
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}},
            }
    return doc


def _with_examples(doc: dict[str, Any]) -> dict[str, Any]:
    """An example for every request body, so /docs' "Try it out" starts from a valid body: the
    model's own example if it declares one, else one built from the schema (required fields)."""
    schemas = doc.get("components", {}).get("schemas", {})
    for operations in doc.get("paths", {}).values():
        for operation in operations.values():
            content = (operation.get("requestBody") or {}).get("content", {}).get("application/json")
            if content is None or "example" in content or "examples" in content:
                continue
            content["example"] = example_of(content.get("schema") or {}, schemas)
    return doc


def example_of(schema: dict[str, Any], schemas: dict[str, Any], depth: int = 0) -> Any:
    """A small value that satisfies a JSON schema (as pydantic writes them): required properties
    only, enum and const values, defaults, minimum lengths and bounds."""
    if depth > 12:
        return None
    ref = schema.get("$ref")
    if ref:
        return example_of(schemas.get(ref.rsplit("/", 1)[-1], {}), schemas, depth + 1)
    for key in ("example", "const", "default"):
        if key in schema and schema[key] is not None:
            return schema[key]
    if schema.get("examples"):
        return schema["examples"][0]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(key) or [] if o.get("type") != "null"]
        if options:
            return example_of(options[0], schemas, depth + 1)
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {name: example_of(props[name], schemas, depth + 1) for name in schema.get("required") or []}
    if kind == "array":
        count = int(schema.get("minItems") or 0)
        return [example_of(schema.get("items") or {}, schemas, depth + 1) for _ in range(count)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = low + (1 if "exclusiveMinimum" in schema else 0)
        high = schema.get("maximum")
        value = min(value, high) if high is not None else value
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    if kind == "string":
        return "example"[: schema.get("maxLength", 7)].ljust(int(schema.get("minLength") or 0), "x")
    return None


def _without_422(doc: dict[str, Any]) -> dict[str, Any]:
    """Our validation errors are 400s (see expconsole.api.app), so drop Powertools' 422 entries."""
    for operations in doc.get("paths", {}).values():
        for operation in operations.values():
            operation.get("responses", {}).pop("422", None)
    schemas = doc.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        if f'"#/components/schemas/{name}"' not in json.dumps(
            {k: v for k, v in doc.items() if k != "components"}
        ):
            schemas.pop(name, None)
    return doc


def render(root: Path | None = None) -> str:
    return json.dumps(document(root), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
