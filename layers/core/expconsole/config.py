"""Settings read from the environment, so the same code runs in Lambda and on a laptop."""

from __future__ import annotations

import os

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
    raw = os.environ.get("KEY_CACHE_SECONDS", "")
    try:
        return max(0.0, float(raw)) if raw.strip() else DEFAULT_KEY_CACHE_SECONDS
    except ValueError:
        return DEFAULT_KEY_CACHE_SECONDS
