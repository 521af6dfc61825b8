"""One Powertools resolver per function, with our errors, auth check and request context.

Each `functions/<group>/app.py` declares a Router and calls `build(router, key_kind=...)`; this
module wires the parts every function shares so the function file stays thin.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import BaseModel

from expconsole import aws, context, observability
from expconsole.api import auth
from expconsole.api.errors import (
    ApiError,
    BadRequest,
    NotFound,
    PayloadTooLarge,
    ServiceUnavailable,
    body_of,
    status_of,
)
from expconsole.errors import DomainError
from expconsole.models.validation import field_errors
from expconsole.store.dynamo import StoreTooLarge, StoreUnavailable

logger = observability.logger

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
# Console requests: API Gateway allows 10 MB, but no console entity needs more than this (a stored
# item holds at most 400 KB); ingestion has its own limits (services.ingest).
MAX_CONSOLE_BODY_BYTES = 1_048_576


def error_response(error: DomainError) -> Response[str]:
    return Response(
        status_code=status_of(error),
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(body_of(error)),
    )


def _gateway_response(error: DomainError, headers: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "statusCode": status_of(error),
        "headers": {"Content-Type": content_types.APPLICATION_JSON, **(headers or {})},
        "body": json.dumps(body_of(error)),
        "isBase64Encoded": False,
    }


def _base_url(event: dict[str, Any]) -> str:
    ctx = event.get("requestContext") or {}
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    host = headers.get("host") or ctx.get("domainName") or ""
    proto = headers.get("x-forwarded-proto", "https")
    return f"{proto}://{host}" if host else ""


def _has_json_body_problem(event: dict[str, Any]) -> DomainError | None:
    if not event.get("body"):
        return None
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    if headers.get("content-encoding", "").strip().lower() in ("gzip", "deflate"):
        return None  # a compressed body (SDK event batches): its route decodes and checks it
    ctype = headers.get("content-type", "")
    if ctype.split(";")[0].strip().lower() != "application/json":
        err = ApiError(f"Content-Type must be application/json for a request body (got {ctype or 'none'!r}).")
        err.status = 415
        return err
    if event.get("isBase64Encoded"):
        # API Gateway base64-encodes a body that is not UTF-8 text; JSON is always UTF-8 (RFC 8259).
        try:
            base64.b64decode(event["body"], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return BadRequest.field("body", "the request body is not valid JSON (it is not UTF-8 text)")
    return None


def new_router() -> APIGatewayHttpRouter:
    """A function's router. Powertools' `Router.__init__` declares no return type, so strict mypy
    sees it as untyped: this is the one place that calls it."""
    return APIGatewayHttpRouter()  # type: ignore[no-untyped-call]


def build(
    *routers: APIGatewayHttpRouter, key_kind: auth.KeyKind = "console", instrumented: bool = True
) -> tuple[APIGatewayHttpResolver, Handler]:
    """The resolver for these routers and the Lambda handler that guards it.

    `instrumented=False` for a function that wraps its own handler (observability.instrument),
    because it takes other events too."""
    app = APIGatewayHttpResolver(enable_validation=True)
    for router in routers:
        app.include_router(router)

    app.use([_refuse_unknown_query])

    # Registered by a call rather than as decorators: Powertools' `exception_handler` declares no
    # return type, and as a decorator it would leave these functions untyped to mypy.
    def _domain_error(exc: DomainError) -> Response[str]:
        return error_response(exc)

    def _validation_error(exc: RequestValidationError) -> Response[str]:
        return error_response(BadRequest.fields(field_errors(exc.errors(), _body_model(app))))

    app.exception_handler(DomainError)(_domain_error)
    app.exception_handler(RequestValidationError)(_validation_error)

    @app.not_found
    def _not_found(_exc: Exception) -> Response[str]:
        event = app.current_event
        return error_response(NotFound(f"No route for {event.http_method} {event.path}."))

    def guarded(event: dict[str, Any], lambda_context: Any) -> dict[str, Any]:
        response = _guarded(event, lambda_context)
        observability.count_response(response)
        return response

    def _guarded(event: dict[str, Any], lambda_context: Any) -> dict[str, Any]:
        try:
            return _checked(event, lambda_context)
        except RecursionError:
            return _gateway_response(
                BadRequest.field("body", "nests arrays and objects too deeply (limit near 1,000 levels)")
            )
        except StoreTooLarge:
            return _gateway_response(
                PayloadTooLarge(
                    "The entity would exceed the 400 KB a stored item may hold; nothing was written. Shorten "
                    "its lists or texts (rules, conditions, tags, descriptions)."
                )
            )
        except Exception as exc:
            if _storage_unavailable(exc):
                # The cause (operation and error code) is logged; the answer names neither.
                logger.warning(
                    "Storage unavailable",
                    extra={"path": loggable_path(event), "cause": aws.describe(exc)},
                    exc_info=True,
                )
                return _gateway_response(_unavailable(_method(event)), {"Retry-After": "1"})
            logger.exception("Unhandled error", extra={"path": loggable_path(event)})
            return _gateway_response(_internal())

    def _checked(event: dict[str, Any], lambda_context: Any) -> dict[str, Any]:
        """The key first (reading it may fail as storage does: a 503 like any other read), then
        the body's media type and size, then the route."""
        verdict = auth.check(event, key_kind)
        if isinstance(verdict, ApiError):
            return _gateway_response(verdict)
        problem = _has_json_body_problem(event)
        if problem:
            return _gateway_response(problem)
        if key_kind == "console" and _body_bytes(event) > MAX_CONSOLE_BODY_BYTES:
            return _gateway_response(
                PayloadTooLarge(f"Request body is over {MAX_CONSOLE_BODY_BYTES} bytes (1 MiB): the limit.")
            )
        key_id, kind = verdict
        token = context.set_caller(context.Caller(key_id=key_id, key_kind=kind, base_url=_base_url(event)))
        try:
            return app.resolve(event, lambda_context)
        finally:
            context.reset(token)

    return app, observability.instrument(guarded) if instrumented else guarded


def _refuse_unknown_query(
    app: APIGatewayHttpResolver, next_middleware: Callable[..., Response[Any]]
) -> Response[Any]:
    """A query parameter the route does not declare is a 400, as an unknown body field is: a typo'd
    filter or option silently ignored returns an unfiltered or uncorrected answer."""
    given = app.current_event.query_string_parameters or {}
    if given:
        accepted = accepted_query(app.context["_route"])
        unknown = sorted(name for name in given if name not in accepted)
        if unknown:
            listing = ", ".join(sorted(accepted)) if accepted else "none"
            message = f"is not a query parameter of this route (it accepts: {listing})"
            raise BadRequest.fields([{"field": name, "message": message} for name in unknown])
    return next_middleware(app)


def _body_model(app: APIGatewayHttpResolver) -> Any:
    """The type the route validates its body as (None without a body): an unknown field's error
    names the closest of its fields (expconsole.models.validation.field_errors)."""
    body = getattr(app.context.get("_route"), "body_field", None)
    return body.type_ if body is not None else None


_ACCEPTED: dict[int, frozenset[str]] = {}


def accepted_query(route: Any) -> frozenset[str]:
    """The query parameter names a Powertools route declares: plain `Query()` parameters by their
    alias, a pydantic model declared as `Query()` by its fields' names and aliases."""
    cached = _ACCEPTED.get(id(route))
    if cached is not None:
        return cached
    names: set[str] = set()
    for param in route.dependant.query_params:
        model = param.field_info.annotation
        if isinstance(model, type) and issubclass(model, BaseModel):
            for name, info in model.model_fields.items():
                names.add(info.alias or name)
        else:
            names.add(param.alias)
    _ACCEPTED[id(route)] = frozenset(names)
    return _ACCEPTED[id(route)]


def loggable_path(event: dict[str, Any]) -> str:
    """The request path with any key in it masked (the SDK protocol puts the key in its path)."""
    return auth.mask_keys(str(event.get("rawPath") or ""))


def _body_bytes(event: dict[str, Any]) -> int:
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        return len(body) * 3 // 4
    return len(body) if len(body) * 4 <= MAX_CONSOLE_BODY_BYTES else len(body.encode("utf-8"))


def _storage_unavailable(exc: Exception) -> bool:
    """DynamoDB or S3 throttling, failing or not answering past the retries (expconsole.aws), or a
    store giving up on unprocessed items (StoreUnavailable): a 503, not a 500."""
    return isinstance(exc, StoreUnavailable) or aws.is_transient(exc)


def _method(event: dict[str, Any]) -> str:
    return str(((event.get("requestContext") or {}).get("http") or {}).get("method") or "").upper()


def _unavailable(method: str) -> ServiceUnavailable:
    if method in ("GET", "HEAD"):
        return ServiceUnavailable(
            "Storage is unavailable right now (throttled, failing or not answering). Retry shortly."
        )
    return ServiceUnavailable(
        "Storage is unavailable right now (throttled, failing or not answering), so the request did not "
        "complete. A change is stored whole or not at all: read the resource to see whether this one "
        "was, then retry."
    )


def _internal() -> ApiError:
    err = ApiError("Internal error; the request was not applied. Try again, and report it if it persists.")
    err.status = 500
    return err
