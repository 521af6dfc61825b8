"""The Statsig server SDK protocol (server secrets only, in STATSIG-API-KEY or SERVICE-API-KEY).

`GET /v1/download_config_specs/{key}.json` and `/v2/...` serve the built spec document from S3
(gzip as stored, ETag, `has_updates: false` for an unchanged `sinceTime`); `POST
/v1/get_id_lists` and `GET /v1/id_lists/{segment}/{file}` the id lists; `POST /v1/log_event`
stores the SDK's events. Rules: expconsole.services.sdk.

Routes answering bytes (gzip'd JSON, id-list text) declare no return type: Powertools would
validate and re-serialise their body through it (even `Response[Any]`: it reads the type inside).
mypy strict wants one, hence their narrow `type: ignore[no-untyped-def]`.
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Query

from expconsole import context
from expconsole.api.app import build, new_router
from expconsole.api.docs import responses
from expconsole.api.errors import BadRequest, NotFound, RangeNotSatisfiable, ServiceUnavailable, body_of
from expconsole.models.sdk import (
    Accepted,
    CheckGateAnswer,
    CheckGateBody,
    ConfigAnswer,
    GateAnswer,
    GetConfigBody,
    GetExperimentBody,
    GetLayerBody,
    IdLists,
    LayerAnswer,
    LogEventAccepted,
    SpecDocument,
)
from expconsole.services.sdk import documents, evaluate, log_event

router = new_router()
_NO_BODY: dict[str, Any] = {}
SPEC_RESPONSES = {
    **responses(200, SpecDocument, "The document (gzip'd when accepted), or has_updates false", 404),
    302: {"description": "Too large for a Lambda answer: a pre-signed S3 URL in Location.", **_NO_BODY},
    304: {"description": "Unchanged since If-None-Match.", **_NO_BODY},
}
_TEXT = {"text/plain": {"schema": {"type": "string"}}}
ID_LIST_RESPONSES = {
    **responses(200, Accepted, "replaced below", 404),
    200: {"description": "The whole file: `+<hash>` lines.", "content": _TEXT},
    206: {"description": "The file from the Range's start on.", "content": _TEXT},
    416: {"description": "A Range starting at or past the end of the file.", "content": _TEXT},
}
# A Lambda answer is at most 6 MB, base64 included: a larger document is a redirect to S3.
MAX_INLINE_BYTES = 4 * 1024 * 1024


def _headers() -> dict[str, str]:
    return {k.lower(): v for k, v in (router.current_event.headers or {}).items()}


def _raw_body() -> bytes:
    event = router.current_event
    body = event.body or ""
    return base64.b64decode(body) if event.is_base64_encoded else body.encode("utf-8")


def _json_bytes(status: int, body: bytes, headers: dict[str, str]) -> Response[Any]:
    """JSON already serialised (and maybe gzip'd): lower-case content-type keeps Powertools from
    serialising the bytes again (it re-serialises any body it sees as JSON that is not a str)."""
    return Response(status, None, body, headers={"content-type": content_types.APPLICATION_JSON, **headers})


def _specs(version: int, file: str, since: int | None) -> Response[Any]:
    if not file.endswith(".json") or not file.removesuffix(".json"):
        raise NotFound(
            f"No spec document {file!r}: ask for /v{version}/download_config_specs/<server secret>.json."
        )
    document = documents.current(version)
    if document is None:
        raise ServiceUnavailable(
            "The spec document is being built for the first time; retry in a few seconds."
        )
    if since is not None and since >= document.time:
        body = json.dumps({"has_updates": False, "time": document.time})
        return Response(200, content_types.APPLICATION_JSON, body)
    gzipped = "gzip" in _headers().get("accept-encoding", "")
    # One ETag per representation: the gzip'd bytes are S3's object, the plain ones differ.
    etag = document.etag if gzipped else document.etag.rstrip('"') + '-identity"'
    if _headers().get("if-none-match") == etag:
        return Response(
            304, content_types.APPLICATION_JSON, "", headers={"ETag": etag, "Vary": "Accept-Encoding"}
        )
    if len(document.gz) > MAX_INLINE_BYTES:
        return Response(
            302, content_types.APPLICATION_JSON, "", headers={"Location": documents.presigned_url(version)}
        )
    if gzipped:
        headers = {"ETag": etag, "Content-Encoding": "gzip", "Vary": "Accept-Encoding"}
        return _json_bytes(200, document.gz, headers)
    plain = gzip.decompress(document.gz)
    if len(plain) > MAX_INLINE_BYTES:  # uncompressed, it would not fit a Lambda answer
        return Response(
            302, content_types.APPLICATION_JSON, "", headers={"Location": documents.presigned_url(version)}
        )
    return _json_bytes(200, plain, {"ETag": etag, "Vary": "Accept-Encoding"})


SinceTime = Annotated[
    int | None,
    Query(ge=0, description="The `time` of the document the SDK holds: unchanged → has_updates false."),
]


@router.get(
    "/v1/download_config_specs/<file>",
    tags=["SDK protocol"],
    summary="The spec document the Statsig server SDKs evaluate (v1 JSON); file = <server secret>.json",
    responses=SPEC_RESPONSES,
)
def download_v1(file: str, sinceTime: SinceTime = None):  # type: ignore[no-untyped-def]  # see the docstring
    return _specs(1, file, sinceTime)


@router.get(
    "/v2/download_config_specs/<file>",
    tags=["SDK protocol"],
    summary="The same document in the shape the Rust core (statsig-python-core) reads",
    responses=SPEC_RESPONSES,
)
def download_v2(  # type: ignore[no-untyped-def]  # see the docstring
    file: str,
    sinceTime: SinceTime = None,
    supports_proto: Annotated[
        bool | None, Query(description="Sent by the Rust core; JSON is served.")
    ] = None,
    accept_deltas: Annotated[
        bool | None, Query(description="Sent by the Rust core; the whole document is served.")
    ] = None,
):
    return _specs(2, file, sinceTime)


@router.post(
    "/v1/get_id_lists",
    tags=["SDK protocol"],
    summary="The id lists of id-list segments, with file URLs",
    responses=responses(200, IdLists, "Each id list by name"),
)
def get_id_lists() -> dict[str, Any]:
    base = context.current().base_url
    out = {}
    for name, entry in documents.id_lists().items():
        out[name] = {
            "name": name,
            "size": entry["size"],
            "url": f"{base}/v1/id_lists/{name}/{entry['fileID']}",
            "creationTime": entry["creationTime"],
            "fileID": entry["fileID"],
        }
    return out


@router.get(
    "/v1/id_lists/<segment>/<file_id>",
    tags=["SDK protocol"],
    summary="An id-list file: `+<hash>` lines; honours `Range: bytes=N-`",
    responses=ID_LIST_RESPONSES,
)
def id_list_file(segment: str, file_id: str):  # type: ignore[no-untyped-def]  # see the docstring
    start = 0
    wanted = _headers().get("range")
    if wanted:
        unit, _, spec = wanted.partition("=")
        first, _, last = spec.partition("-")
        if unit.strip() != "bytes" or not first.strip().isdigit() or last.strip():
            raise BadRequest.field("Range", "must be `bytes=<start>-` (an open range from a byte offset)")
        start = int(first)
    found = documents.id_list_bytes(segment, file_id, start)
    if found is None:
        raise NotFound(f"No id-list file {segment}/{file_id}: ask get_id_lists for the current one.")
    data, size = found
    if wanted and not data:  # a range from the end or past it: as S3 answers (the SDKs never ask)
        error = RangeNotSatisfiable(f"Range: the file has {size} bytes; bytes={start}- holds none.")
        return Response(
            416,
            content_types.APPLICATION_JSON,
            json.dumps(body_of(error)),
            headers={"Content-Range": f"bytes */{size}"},
        )
    headers = {"Content-Length": str(len(data)), "Accept-Ranges": "bytes"}
    if wanted:
        headers["Content-Range"] = f"bytes {start}-{size - 1}/{size}"
    return Response(206 if wanted else 200, "text/plain", data, headers=headers)


@router.post(
    "/v1/log_event",
    tags=["SDK protocol"],
    summary="An SDK's event batch (gzip allowed): custom events, exposures, gate checks",
    responses=responses(202, LogEventAccepted, "Stored, with what was skipped"),
    # The body is documented from this model (expconsole_tools.openapi) but read by the service.
    openapi_extensions={"x-request-body-model": "expconsole.models.sdk_bodies:LogEventBody"},
)
def post_log_event() -> tuple[dict[str, Any], int]:
    return log_event.log_events(_raw_body(), _headers().get("content-encoding")), 202


@router.post(
    "/v1/sdk_exception",
    tags=["SDK protocol"],
    summary="An SDK's own error report (point the SDK's error reporter here, not at Statsig's host)",
    responses=responses(202, Accepted, "Logged"),
    openapi_extensions={"x-request-body-model": "expconsole.models.sdk_bodies:SdkExceptionBody"},
)
def sdk_exception() -> tuple[dict[str, Any], int]:
    log_event.report_exception(_raw_body())
    return {"success": True}, 202


# --- evaluation for callers without an SDK (the peer's HTTP API shapes) -------------------------


@router.post(
    "/v1/check_gate",
    tags=["SDK protocol"],
    summary="A gate's value for a user, as the SDKs answer it (logs the exposure); gateNames for several",
    responses=responses(200, CheckGateAnswer, "The answer (one, or each gate's by name)", 404),
)
def check_gate(body: CheckGateBody) -> GateAnswer | dict[str, GateAnswer]:
    if (body.gateName is None) == (body.gateNames is None):
        raise BadRequest.field("gateName", "send exactly one of gateName (one gate) or gateNames (several)")
    answers = evaluate.check_gates(
        body.user,
        [body.gateName] if body.gateName else list(body.gateNames or []),
        several=body.gateNames is not None,
    )
    if body.gateName is not None:
        return GateAnswer(**answers[0])
    return {a["name"]: GateAnswer(**a) for a in answers}


@router.post(
    "/v1/get_config",
    tags=["SDK protocol"],
    summary="A dynamic config's value for a user",
    responses=responses(200, ConfigAnswer, "The answer", 404),
)
def get_config(body: GetConfigBody) -> ConfigAnswer:
    return ConfigAnswer(**evaluate.get_config(body.user, body.configName, "config"))


@router.post(
    "/v1/get_experiment",
    tags=["SDK protocol"],
    summary="An experiment's group and values for a user",
    responses=responses(200, ConfigAnswer, "The answer", 404),
)
def get_experiment(body: GetExperimentBody) -> ConfigAnswer:
    return ConfigAnswer(**evaluate.get_config(body.user, body.experimentName, "experiment"))


@router.post(
    "/v1/get_layer",
    tags=["SDK protocol"],
    summary="A layer's values for a user",
    responses=responses(200, LayerAnswer, "The answer", 404),
)
def get_layer(body: GetLayerBody) -> LayerAnswer:
    return LayerAnswer(**evaluate.get_layer(body.user, body.layerName))


app, lambda_handler = build(router, key_kind="server")
