"""One Powertools resolver per function, with our errors, auth check and request context.

Each `functions/<group>/app.py` declares a Router and calls `build(router, key_kind=...)`; this
module wires the parts every function shares so the function file stays thin.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from expconsole import context
from expconsole.api import auth
from expconsole.api.errors import ApiError, BadRequest, NotFound
from expconsole.api.validation import field_errors

logger = Logger(service="expconsole")

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def error_response(error: ApiError) -> Response:
    return Response(
        status_code=error.status,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(error.body()),
    )


def _gateway_response(error: ApiError) -> dict[str, Any]:
    return {
        "statusCode": error.status,
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "body": json.dumps(error.body()),
        "isBase64Encoded": False,
    }


def _base_url(event: dict[str, Any]) -> str:
    ctx = event.get("requestContext") or {}
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    host = headers.get("host") or ctx.get("domainName") or ""
    proto = headers.get("x-forwarded-proto", "https")
    return f"{proto}://{host}" if host else ""


def _has_json_body_problem(event: dict[str, Any]) -> ApiError | None:
    if not event.get("body"):
        return None
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    ctype = headers.get("content-type", "")
    if ctype.split(";")[0].strip().lower() != "application/json":
        err = ApiError(f"Content-Type must be application/json for a request body (got {ctype or 'none'!r}).")
        err.status = 415
        return err
    return None


def build(
    *routers: APIGatewayHttpRouter, key_kind: auth.KeyKind = "console"
) -> tuple[APIGatewayHttpResolver, Handler]:
    """The resolver for these routers and the Lambda handler that guards it."""
    app = APIGatewayHttpResolver(enable_validation=True)
    for router in routers:
        app.include_router(router)

    @app.exception_handler(ApiError)
    def _api_error(exc: ApiError) -> Response:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    def _validation_error(exc: RequestValidationError) -> Response:
        return error_response(BadRequest.fields(field_errors(exc.errors())))

    @app.not_found
    def _not_found(_exc: Exception) -> Response:
        event = app.current_event
        return error_response(NotFound(f"No route for {event.http_method} {event.path}."))

    def lambda_handler(event: dict[str, Any], lambda_context: Any) -> dict[str, Any]:
        verdict = auth.check(event, key_kind)
        if isinstance(verdict, ApiError):
            return _gateway_response(verdict)
        problem = _has_json_body_problem(event)
        if problem:
            return _gateway_response(problem)
        key_id, kind = verdict
        token = context.set_caller(context.Caller(key_id=key_id, key_kind=kind, base_url=_base_url(event)))
        try:
            return app.resolve(event, lambda_context)
        except Exception:
            logger.exception("Unhandled error", extra={"path": event.get("rawPath")})
            return _gateway_response(_internal())
        finally:
            context.reset(token)

    return app, lambda_handler


def _internal() -> ApiError:
    err = ApiError("Internal error; the request was not applied. Try again, and report it if it persists.")
    err.status = 500
    return err
