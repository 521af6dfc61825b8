"""Settings read from the environment, so the same code runs in Lambda and on a laptop."""

from __future__ import annotations

import logging
import os
from functools import cache

CONSOLE_PREFIX = "/console/v1"
CREATOR_NAME = "CONSOLE API"
OWNER_TYPE = "SDK_KEY"


def table_name() -> str:
    """The single DynamoDB table (TABLE_NAME, set by the template or the local server)."""
    return os.environ.get("TABLE_NAME", "expconsole")


def events_bucket() -> str:
    """The events bucket (EVENTS_BUCKET)."""
    return os.environ.get("EVENTS_BUCKET", "expconsole-events")


# How long a function's sandbox trusts a key it has resolved (the KeyCacheSeconds stack parameter).
DEFAULT_KEY_CACHE_SECONDS = 60.0


def key_cache_seconds() -> float:
    """KEY_CACHE_SECONDS: seconds a sandbox keeps an active key it looked up (0: look up every
    request). A key deactivated meanwhile keeps working in that sandbox until then."""
    return seconds("KEY_CACHE_SECONDS", DEFAULT_KEY_CACHE_SECONDS)


def seconds(name: str, default: float) -> float:
    """A duration in seconds from the environment variable `name` (negative counts as 0); unset or
    empty gives `default`. A value that is not a number also gives `default`, with a warning naming
    the variable, its value and the default, so a misconfigured function says so in its log
    instead of silently running on the default."""
    raw = os.environ.get(name, "")
    if not raw.strip():
        return default
    try:
        return max(0.0, float(raw))
    except ValueError:
        _warn_not_a_number(name, raw, default)
        return default


@cache
def _warn_not_a_number(name: str, raw: str, default: float) -> None:
    """Once per sandbox and value: every request reads the setting."""
    logging.getLogger("expconsole.config").warning(
        "%s=%r is not a number of seconds; using the default, %s", name, raw, default
    )
