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
