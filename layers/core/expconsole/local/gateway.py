"""API Gateway (HTTP API) as the local server plays it: routes, payload-2.0 events, the authorizer.

The functions are the deployed ones, imported in-process. What API Gateway does before and
after them is reproduced here, down to its bare `{"message": ...}` errors, so a client sees the
same behaviour locally and in the account.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import re
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, unquote

from expconsole.local.template import Api, Authorizer, Function, Route, module_name

ACCOUNT_ID = "123456789012"
API_ID = "local"
REGION = "us-east-1"
MAX_BODY_BYTES = 10 * 1024 * 1024

_EXACT, _PARAM, _GREEDY = 0, 1, 2
_PARAM_SEGMENT = re.compile(r"^\{([^{}+]+)\}$")
_GREEDY_SEGMENT = re.compile(r"^\{([^{}+]+)\+\}$")


@dataclass
class HttpRequest:
    """A request as it arrived: `target` is the path and query exactly as sent."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes = b""
    source_ip: str = "127.0.0.1"
    protocol: str = "HTTP/1.1"


@dataclass
class HttpResponse:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


def gateway_error(status: int, message: str) -> HttpResponse:
    """An error API Gateway itself answers with (not a function): a bare `{"message": ...}`."""
    return HttpResponse(
        status, [("Content-Type", "application/json")], json.dumps({"message": message}).encode()
    )


class RouteTable:
    """HTTP API route selection: exact segments beat `{param}`, which beats `{proxy+}`."""

    def __init__(self, routes: list[Route]) -> None:
        self._routes = [(route, _compile(route.path)) for route in routes]

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        """The route for a request and its URL-decoded path parameters; None is a 404.

        A known path with an unrouted method is a 404 too, as API Gateway answers it.
        """
        parts = path.split("/")[1:]
        best: tuple[Any, Route, dict[str, str]] | None = None
        for route, pattern in self._routes:
            if route.method not in (method, "ANY"):
                continue
            params = _match(pattern, parts)
            if params is None:
                continue
            rank = (tuple(kind for kind, _ in pattern), route.method == "ANY")
            if best is None or rank < best[0]:
                best = (rank, route, params)
        return None if best is None else (best[1], best[2])


def _compile(path: str) -> list[tuple[int, str]]:
    pattern = []
    for segment in path.split("/")[1:]:
        if greedy := _GREEDY_SEGMENT.match(segment):
            pattern.append((_GREEDY, greedy.group(1)))
        elif param := _PARAM_SEGMENT.match(segment):
            pattern.append((_PARAM, param.group(1)))
        else:
            pattern.append((_EXACT, segment))
    return pattern


def _match(pattern: list[tuple[int, str]], parts: list[str]) -> dict[str, str] | None:
    params: dict[str, str] = {}
    for index, (kind, value) in enumerate(pattern):
        if kind == _GREEDY:
            rest = "/".join(parts[index:])
            if not rest:
                return None
            params[value] = unquote(rest)
            return params
        if index >= len(parts):
            return None
        if kind == _EXACT and unquote(parts[index]) != value:
            return None
        if kind == _PARAM:
            if not parts[index]:
                return None
            params[value] = unquote(parts[index])
    return params if len(parts) == len(pattern) else None


def build_event(
    request: HttpRequest, route: Route, path_parameters: dict[str, str], *, request_id: str, now: float
) -> dict[str, Any]:
    """The payload-2.0 event API Gateway would send the route's function for this request."""
    path, _, query = request.target.partition("?")
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in request.headers:
        lower = name.lower()
        if lower == "cookie":
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
        else:
            headers[lower] = f"{headers[lower]},{value}" if lower in headers else value
    host = headers.get("host", "")
    forwarded = headers.get("x-forwarded-for")
    headers["x-forwarded-for"] = f"{forwarded}, {request.source_ip}" if forwarded else request.source_ip
    headers.setdefault("x-forwarded-proto", "http")
    port = host.rpartition(":")[2]
    headers.setdefault("x-forwarded-port", port if port.isdigit() else "80")

    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route.route_key,
        "rawPath": path,
        "rawQueryString": query,
    }
    if cookies:
        event["cookies"] = cookies
    event["headers"] = headers
    if query:
        parameters: dict[str, str] = {}
        for name, value in parse_qsl(query, keep_blank_values=True):
            parameters[name] = f"{parameters[name]},{value}" if name in parameters else value
        event["queryStringParameters"] = parameters
    event["requestContext"] = {
        "accountId": ACCOUNT_ID,
        "apiId": API_ID,
        "domainName": host,
        "domainPrefix": host.split(".")[0].split(":")[0],
        "http": {
            "method": request.method,
            "path": path,
            "protocol": request.protocol,
            "sourceIp": request.source_ip,
            "userAgent": headers.get("user-agent", ""),
        },
        "requestId": request_id,
        "routeKey": route.route_key,
        "stage": "$default",
        "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
        "timeEpoch": int(now * 1000),
    }
    encoded = False
    if request.body:
        try:
            event["body"] = request.body.decode("utf-8")
        except UnicodeDecodeError:
            event["body"] = base64.b64encode(request.body).decode("ascii")
            encoded = True
    if path_parameters:
        event["pathParameters"] = path_parameters
    event["isBase64Encoded"] = encoded
    return event


def authorizer_event(event: dict[str, Any], route: Route, identity: list[str]) -> dict[str, Any]:
    """The payload-2.0 REQUEST authorizer event: the request without its body, plus identity."""
    out = {k: v for k, v in event.items() if k not in ("body", "isBase64Encoded")}
    out["type"] = "REQUEST"
    out["routeArn"] = (
        f"arn:aws:execute-api:{REGION}:{ACCOUNT_ID}:{API_ID}/$default/{route.method}{route.path}"
    )
    out["identitySource"] = identity
    return out


def to_http_response(result: Any) -> HttpResponse:
    """A function's payload-2.0 result as the HTTP response API Gateway sends."""
    if not (isinstance(result, dict) and "statusCode" in result):
        return HttpResponse(200, [("Content-Type", "application/json")], json.dumps(result).encode())
    body = result.get("body") or ""
    if not isinstance(body, str):
        raise TypeError(f"body must be a string, got {type(body).__name__}")
    data = base64.b64decode(body, validate=True) if result.get("isBase64Encoded") else body.encode("utf-8")
    headers = [(str(name), str(value)) for name, value in (result.get("headers") or {}).items()]
    if not any(name.lower() == "content-type" for name, _ in headers):
        headers.append(("Content-Type", "application/json"))
    headers.extend(("Set-Cookie", str(cookie)) for cookie in result.get("cookies") or [])
    return HttpResponse(int(result["statusCode"]), headers, data)


class LambdaContext:
    """The attributes of a Lambda context that handlers and Powertools read."""

    def __init__(self, function: Function) -> None:
        self.function_name = function.logical_id
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{function.logical_id}"
        self.memory_limit_in_mb = function.memory_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function.logical_id}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + function.timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class Functions:
    """Imports each handler on first use and runs one invocation at a time.

    Powertools keeps the current event in a class attribute, so two handlers must never run at
    once in one process; Lambda gives each invocation its own sandbox, here they take turns.
    Handler files are imported by path under a unique module name because every function's
    file is called app.py.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._modules: dict[Path, ModuleType] = {}

    def invoke(self, function: Function, event: dict[str, Any]) -> Any:
        with self._lock:
            module = self._modules.get(function.module_file) or self._import(function)
            handler: Callable[[dict[str, Any], Any], Any] | None = getattr(
                module, function.handler_name, None
            )
            if not callable(handler):
                raise LookupError(f"{function.module_file} has no function {function.handler_name}")
            return handler(event, LambdaContext(function))

    def _import(self, function: Function) -> ModuleType:
        name = module_name(function)
        spec = importlib.util.spec_from_file_location(name, function.module_file)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {function.module_file}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        self._modules[function.module_file] = module
        return module


class _Verdicts:
    """The authorizer's answers per identity, kept for ReauthorizeEvery seconds as API Gateway does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, tuple[str, ...]], tuple[float, dict[str, Any] | None]] = {}

    def get(self, key: tuple[str, tuple[str, ...]]) -> tuple[bool, dict[str, Any] | None]:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] <= time.monotonic():
                return False, None
            return True, entry[1]

    def put(self, key: tuple[str, tuple[str, ...]], context: dict[str, Any] | None, ttl: int) -> None:
        now = time.monotonic()
        with self._lock:
            self._entries = {k: v for k, v in self._entries.items() if v[0] > now}
            self._entries[key] = (now + ttl, context)


class Gateway:
    """Routes a request, runs the authorizer, invokes the function and shapes its response."""

    def __init__(self, api: Api, functions: Functions | None = None) -> None:
        self.routes = RouteTable(api.routes)
        self.functions = functions or Functions()
        self._verdicts = _Verdicts()

    def handle(self, request: HttpRequest) -> HttpResponse:
        request_id = base64.b64encode(os.urandom(10)).decode("ascii")
        response = self._respond(request, request_id)
        response.headers.append(("Apigw-Requestid", request_id))
        return response

    def _respond(self, request: HttpRequest, request_id: str) -> HttpResponse:
        match = self.routes.match(request.method, request.target.partition("?")[0])
        if match is None:
            return gateway_error(404, "Not Found")
        route, path_parameters = match
        event = build_event(request, route, path_parameters, request_id=request_id, now=time.time())
        denied = self._authorize(route, route.authorizer, event) if route.authorizer else None
        return denied or self._invoke(route, event)

    def _authorize(self, route: Route, authorizer: Authorizer, event: dict[str, Any]) -> HttpResponse | None:
        """None when the request may proceed (with the authorizer's context in the event)."""
        identity = [event["headers"].get(name.lower(), "") for name in authorizer.identity_headers]
        if not all(identity):
            return gateway_error(401, "Unauthorized")
        key = (authorizer.function.logical_id, tuple(identity))
        cached, context = self._verdicts.get(key)
        if not cached:
            try:
                verdict = self.functions.invoke(authorizer.function, authorizer_event(event, route, identity))
                if not isinstance(verdict, dict) or not isinstance(verdict.get("isAuthorized"), bool):
                    raise TypeError(f"authorizer answered {type(verdict).__name__} without isAuthorized")
            except Exception:
                _log_failure(f"authorizer {authorizer.function.logical_id} failed for {route.route_key}")
                return gateway_error(500, "Internal Server Error")
            context = (verdict.get("context") or {}) if verdict["isAuthorized"] else None
            if authorizer.ttl_seconds > 0:
                self._verdicts.put(key, context, authorizer.ttl_seconds)
        if context is None:
            return gateway_error(403, "Forbidden")
        event["requestContext"]["authorizer"] = {"lambda": context}
        return None

    def _invoke(self, route: Route, event: dict[str, Any]) -> HttpResponse:
        try:
            result = self.functions.invoke(route.function, event)
        except Exception:
            _log_failure(f"{route.function.logical_id} failed on {route.route_key}")
            return gateway_error(500, "Internal Server Error")
        try:
            return to_http_response(result)
        except (TypeError, ValueError):
            _log_failure(f"{route.function.logical_id} returned a malformed response for {route.route_key}")
            return gateway_error(500, "Internal Server Error")


def _log_failure(what: str) -> None:
    """The traceback to stderr; never the request (its headers carry the API key)."""
    sys.stderr.write(f"{what}\n{traceback.format_exc()}")
    sys.stderr.flush()
