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
# An example's fields set from the clock when the document is served (functions/docs/app.py).
EXAMPLE_TIMES = "x-example-times"


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
    """Each request body's examples, from its model (`json_schema_extra={"examples": [...]}`).

    They are bodies a user can send as is, in order (tests/functional/test_openapi_examples.py
    sends every one to the routes): /docs' "Try it out" starts from them. One example is the
    media type's `example`; several are its named `examples`, which Swagger UI offers as a
    choice. A model that declares none gives its body none, and tests/unit/test_openapi.py
    fails: nothing is made up from the schema. The examples leave the component schemas (one
    home each); a model's `x-example-times` (field -> ms ahead) moves with them, for the docs
    function to set those fields from the clock.
    """
    schemas = doc.get("components", {}).get("schemas", {})
    for operations in doc.get("paths", {}).values():
        for operation in operations.values():
            content = (operation.get("requestBody") or {}).get("content", {}).get("application/json")
            if content is None:
                continue
            model = _body_model(content.get("schema") or {}, schemas)
            values = model.get("examples") or []
            if len(values) == 1:
                content["example"] = values[0]
            elif values:
                content["examples"] = _named(values)
            if model.get(EXAMPLE_TIMES):
                content[EXAMPLE_TIMES] = model[EXAMPLE_TIMES]
    for schema in schemas.values():  # one home for each example: its body's media type
        schema.pop("examples", None)
        schema.pop(EXAMPLE_TIMES, None)
    return doc


def _body_model(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    """The component schema of a body: `$ref`, or an optional body's `anyOf [$ref, null]`."""
    for option in [schema, *(schema.get("anyOf") or [])]:
        ref = option.get("$ref")
        if ref:
            return dict(schemas.get(ref.rsplit("/", 1)[-1], {}))
    return {}


def _named(values: list[Any]) -> dict[str, Any]:
    """Several examples by name, numbered in the order they are sent (a later one may name what
    an earlier one creates): `1. <name> (<type>)`, `1. <name>` or `1. example`."""
    out: dict[str, Any] = {}
    for index, value in enumerate(values, 1):
        fields = value if isinstance(value, dict) else {}
        name, kind = fields.get("name"), fields.get("type")
        label = f"{name} ({kind})" if name and kind else str(name or "example")
        out[f"{index}. {label}"] = {"value": value}
    return out


def examples_of(content: dict[str, Any]) -> list[tuple[str, Any]]:
    """A media type's examples as (name, body), in the order they are sent."""
    if "example" in content:
        return [("example", content["example"])]
    named = content.get("examples") or {}
    order = sorted(named, key=lambda name: int(name.split(".", 1)[0]))
    return [(name, named[name]["value"]) for name in order]


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
