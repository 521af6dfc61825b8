"""What the local server needs from template.yaml: HTTP routes and the functions serving them.

Reading the SAM template itself, rather than keeping a second route list, means the local
server cannot drift from what `sam deploy` creates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

TEMPLATE_NAME = "template.yaml"
# An HttpApi event with neither Path nor Method is API Gateway's `$default` route: it gets every
# request no other route matches.
DEFAULT_ROUTE = "$default"
_UNRESOLVED = object()
_NO_AUTHORIZERS = (
    "the local server runs no authorizer (the functions check keys themselves, expconsole.api.auth)"
)


class TemplateError(Exception):
    """The template is missing or lacks something the local server needs."""


class _CloudFormationLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no types
    """A safe loader that also reads CloudFormation short-form tags (`!Ref`, `!GetAtt`, `!Sub`, ...)."""


def _short_form(loader: yaml.SafeLoader, tag: str, node: yaml.Node) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if tag in ("Ref", "Condition"):
        return {tag: value}
    if tag == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{tag}": value}


_CloudFormationLoader.add_multi_constructor("!", _short_form)


@dataclass(frozen=True)
class Function:
    """One `AWS::Serverless::Function`: where its handler lives and its Lambda limits."""

    logical_id: str
    module_file: Path
    handler_name: str
    memory_mb: int = 128
    timeout_s: int = 3
    environment: tuple[tuple[str, str], ...] = ()
    """The function's own variables (literals and parameter defaults), beside the global ones."""
    runtime: str = ""
    """Lambda's runtime identifier (python3.12)."""
    layers: tuple[Path, ...] = ()
    """Its layers' content folders, in the template's order (the global ones first, as SAM does)."""


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    function: Function

    @property
    def route_key(self) -> str:
        return DEFAULT_ROUTE if self.path == DEFAULT_ROUTE else f"{self.method} {self.path}"


@dataclass(frozen=True)
class Api:
    routes: list[Route]
    environment: dict[str, str] = field(default_factory=dict)
    # Functions the table's DynamoDB stream invokes (the local server calls them after writes).
    stream_functions: list[Function] = field(default_factory=list)


def find_template(explicit: str | Path | None = None, start: Path | None = None) -> Path:
    """The template given, or template.yaml in `start` (default: cwd) or the nearest parent."""
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            raise TemplateError(f"template not found: {path}")
        return path.resolve()
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / TEMPLATE_NAME).is_file():
            return folder / TEMPLATE_NAME
    raise TemplateError(
        f"{TEMPLATE_NAME} not found in {here} or its parents; run from the repository or pass --template"
    )


def read_template(path: Path) -> dict[str, Any]:
    try:
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=_CloudFormationLoader)
    except yaml.YAMLError as exc:
        raise TemplateError(f"{path} is not valid YAML: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("Resources"), dict):
        raise TemplateError(f"{path} has no Resources section")
    return document


def load_api(path: Path) -> Api:
    """Routes (with their function) of every HttpApi event in the template.

    The functions check keys themselves (expconsole.api.auth), so the API has no authorizer; a
    template that declares one is refused rather than served without it, which would let locally
    through what API Gateway would answer itself."""
    document = read_template(path)
    resources: dict[str, Any] = document["Resources"]
    parameters: dict[str, Any] = document.get("Parameters") or {}
    function_globals: dict[str, Any] = (document.get("Globals") or {}).get("Function") or {}
    base = path.parent

    def function(logical_id: str) -> Function:
        return _function(logical_id, resources, parameters, function_globals, base)

    for api_id, resource in resources.items():
        auth = (resource.get("Properties") or {}).get("Auth") or {}
        if resource.get("Type") == "AWS::Serverless::HttpApi" and auth:
            raise TemplateError(f"{api_id} declares Auth: {_NO_AUTHORIZERS}")
    routes: list[Route] = []
    for logical_id, resource in resources.items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        events = (resource.get("Properties") or {}).get("Events") or {}
        for event_id, event in events.items():
            if event.get("Type") != "HttpApi":
                continue
            props = event.get("Properties") or {}
            if props.get("Auth"):
                raise TemplateError(f"{logical_id}.{event_id} declares Auth: {_NO_AUTHORIZERS}")
            catch_all = "Path" not in props and "Method" not in props
            routes.append(
                Route(
                    method=str(props.get("Method", "ANY")).upper(),
                    path=DEFAULT_ROUTE if catch_all else str(props.get("Path", "/")),
                    function=function(logical_id),
                )
            )
    if not routes:
        raise TemplateError(f"{path} declares no HttpApi events")
    streams = [
        function(logical_id)
        for logical_id, resource in resources.items()
        if resource.get("Type") == "AWS::Serverless::Function"
        and any(
            e.get("Type") == "DynamoDB"
            for e in ((resource.get("Properties") or {}).get("Events") or {}).values()
        )
    ]
    return Api(
        routes=routes, environment=_environment(function_globals, parameters), stream_functions=streams
    )


def _function(
    logical_id: str,
    resources: dict[str, Any],
    parameters: dict[str, Any],
    function_globals: dict[str, Any],
    base: Path,
) -> Function:
    """One function as deployed: its own properties over the template's Globals."""
    resource = resources.get(logical_id) or {}
    if resource.get("Type") != "AWS::Serverless::Function":
        raise TemplateError(f"{logical_id} is not an AWS::Serverless::Function")
    props = {**function_globals, **(resource.get("Properties") or {})}
    code_uri, handler = props.get("CodeUri"), props.get("Handler")
    if not isinstance(code_uri, str) or not isinstance(handler, str) or "." not in handler:
        raise TemplateError(f"{logical_id} needs a local CodeUri and a Handler like app.lambda_handler")
    module, handler_name = handler.rsplit(".", 1)
    own_layers = (resource.get("Properties") or {}).get("Layers") or []
    layers = [*(function_globals.get("Layers") or []), *own_layers]
    return Function(
        logical_id=logical_id,
        module_file=(base / code_uri / (module.replace(".", "/") + ".py")).resolve(),
        handler_name=handler_name,
        memory_mb=_number(props.get("MemorySize"), parameters, 128),
        timeout_s=_number(props.get("Timeout"), parameters, 3),
        environment=tuple(sorted(_environment(resource.get("Properties") or {}, parameters).items())),
        runtime=str(props.get("Runtime") or ""),
        layers=tuple(_layer_folder(logical_id, layer, resources, base) for layer in layers),
    )


def load_functions(path: Path) -> dict[str, Function]:
    """Every `AWS::Serverless::Function` of the template, by logical id (routed or not)."""
    document = read_template(path)
    resources: dict[str, Any] = document["Resources"]
    parameters: dict[str, Any] = document.get("Parameters") or {}
    function_globals: dict[str, Any] = (document.get("Globals") or {}).get("Function") or {}
    return {
        logical_id: _function(logical_id, resources, parameters, function_globals, path.parent)
        for logical_id, resource in resources.items()
        if resource.get("Type") == "AWS::Serverless::Function"
    }


def _layer_folder(logical_id: str, layer: Any, resources: dict[str, Any], base: Path) -> Path:
    """The content folder of a layer the template builds (`!Ref` to its LayerVersion)."""
    name = layer.get("Ref") if isinstance(layer, dict) and len(layer) == 1 else None
    resource = resources.get(name) if isinstance(name, str) else None
    content = ((resource or {}).get("Properties") or {}).get("ContentUri")
    if (resource or {}).get("Type") != "AWS::Serverless::LayerVersion" or not isinstance(content, str):
        raise TemplateError(f"{logical_id}: layer {layer!r} is not a LayerVersion of the template")
    return (base / content).resolve()


def _resolve(value: Any, parameters: dict[str, Any]) -> Any:
    """A literal, or a `!Ref` to a parameter resolved to its Default; _UNRESOLVED otherwise."""
    if isinstance(value, dict):
        ref = value.get("Ref")
        if len(value) == 1 and isinstance(ref, str) and "Default" in (parameters.get(ref) or {}):
            return parameters[ref]["Default"]
        return _UNRESOLVED
    return value


def _number(value: Any, parameters: dict[str, Any], fallback: int) -> int:
    """A numeric setting; the fallback (Lambda's or API Gateway's default) if absent or not static."""
    resolved = _resolve(value, parameters)
    return fallback if value is None or resolved is _UNRESOLVED else int(resolved)


def _environment(function_globals: dict[str, Any], parameters: dict[str, Any]) -> dict[str, str]:
    """Global function variables that are literals or parameter defaults (resources are set locally)."""
    variables = (function_globals.get("Environment") or {}).get("Variables") or {}
    resolved = {name: _resolve(value, parameters) for name, value in variables.items()}
    return {name: str(value) for name, value in resolved.items() if value is not _UNRESOLVED}


def module_name(function: Function) -> str:
    """A unique module name per handler file: every function has an app.py."""
    relative = f"{function.module_file.parent.name}_{function.module_file.stem}".removesuffix("_app")
    return "expconsole_fn_" + re.sub(r"\W", "_", relative)
