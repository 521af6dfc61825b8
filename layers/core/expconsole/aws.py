"""Lazily created, cached boto3 clients.

Creating a client costs tens of milliseconds; doing it at import time would add that to every
cold start, including requests that never touch the service. `AWS_ENDPOINT_URL` (honoured by
botocore) points them at the embedded moto server when running locally.
"""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def client(service: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        service,
        config=Config(retries={"max_attempts": 4, "mode": "standard"}, max_pool_connections=50),
    )


def reset() -> None:
    """Forget cached clients (tests and the local server switch endpoints)."""
    client.cache_clear()
