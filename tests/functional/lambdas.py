"""The API in process: each request goes to the Lambda handler template.yaml routes it to.

A transport for `tests.e2e.client.ApiClient`: tests written against the client run unchanged here,
on the moto store of `tests/conftest.py`, without a server process or HTTP. The headers, the key
among them, reach the function as sent: it checks the key itself, as in AWS. What only the gateway
does (unrouted paths, CORS, body size limits of API Gateway) stays in tests/e2e.
"""

from __future__ import annotations

import functools
import json as jsonlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import yaml
from requests.structures import CaseInsensitiveDict

from tests.conftest import LAMBDA_CONTEXT, ROOT, TEST_KEYS, http_event, load_function

TEMPLATE = ROOT / "template.yaml"
CONSOLE_KEY = TEST_KEYS["console"]  # the keys tests/conftest.py moto_store registers
SERVER_SECRET = TEST_KEYS["server"]
STORE_TABLE = "expconsole-test"  # tests/conftest.py moto_store's table
_UNSET: Any = object()


class _Loader(yaml.SafeLoader):
    """Reads CloudFormation short-form tags (`!Ref`, `!Sub`, ...) as nothing: routes need none."""


_Loader.add_multi_constructor("!", lambda loader, tag, node: None)


@dataclass(frozen=True)
class Route:
    method: str
    segments: tuple[str | None, ...]  # None: a {parameter}
    function: str


@functools.cache
def routes() -> tuple[Route, ...]:
    """Every HttpApi route with a path in template.yaml, and the functions/<dir> serving it."""
    document = yaml.load(TEMPLATE.read_text(), Loader=_Loader)
    found = []
    for resource in document["Resources"].values():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        props = resource.get("Properties") or {}
        function = Path(props["CodeUri"]).name
        for event in (props.get("Events") or {}).values():
            path = (event.get("Properties") or {}).get("Path")
            if event.get("Type") == "HttpApi" and path:
                segments = tuple(None if s.startswith("{") else s for s in path.strip("/").split("/"))
                found.append(Route(str(event["Properties"].get("Method", "ANY")).upper(), segments, function))
    return tuple(found)


def route_for(method: str, path: str) -> str:
    """The function API Gateway would invoke: literal segments win over parameters, left to right."""
    parts = path.strip("/").split("/")
    matching = [
        r
        for r in routes()
        if r.method in (method, "ANY")
        and len(r.segments) == len(parts)
        and all(s is None or s == p for s, p in zip(r.segments, parts, strict=True))
    ]
    assert matching, f"no route in template.yaml for {method} {path}: an e2e (gateway) case"
    return max(matching, key=lambda r: tuple(s is not None for s in r.segments)).function


@dataclass
class InProcessResponse:
    """The parts of requests.Response that tests read."""

    status_code: int
    text: str
    headers: CaseInsensitiveDict[str] = field(default_factory=CaseInsensitiveDict)

    def json(self) -> Any:
        return jsonlib.loads(self.text)


class Lambdas:
    """Sends client requests to the handlers, as the gateway does."""

    def send(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | list[tuple[str, Any]] | None = None,
        json: Any = _UNSET,
        data: str | bytes | None = None,
        timeout: float | None = None,
    ) -> InProcessResponse:
        parts = urlsplit(url)
        query = "&".join(q for q in (parts.query, urlencode(params or {}, doseq=True)) if q)
        lowered = {k.lower(): v for k, v in (headers or {}).items()}
        body: Any = None
        if json is not _UNSET and json is not None:
            body = jsonlib.dumps(json)
        elif data is not None:
            body = data.decode() if isinstance(data, bytes) else data
        event = http_event(
            method,
            parts.path,
            body,
            query=query,
            key_kind=None,
            headers=lowered,
        )
        handler = load_function(route_for(method, parts.path)).lambda_handler
        result = handler(event, LAMBDA_CONTEXT)
        out = CaseInsensitiveDict(result.get("headers") or {})
        for name, values in (result.get("multiValueHeaders") or {}).items():
            out[name] = ", ".join(values)
        return InProcessResponse(result["statusCode"], result.get("body") or "", out)
