"""Lazily created, process-wide boto3 clients.

A Lambda process serves many invocations, so clients are built once and reused; they are built
on first use rather than at import so that moto's ``mock_aws`` (tests, the local stack) is active
when they are made. :func:`reset_clients` forgets them, for tests that switch mock contexts.
"""

from __future__ import annotations

import threading
from typing import Any

import boto3
from botocore.config import Config

# Standard retry mode backs off on throttling, which DMS and DynamoDB apply under load.
_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5})
_clients: dict[str, Any] = {}
# boto3's default session is not thread-safe; the local stack runs handlers from moto's
# Step Functions threads, so creation is serialised.
_lock = threading.Lock()


def client(service_name: str) -> Any:
    """Return the shared client for ``service_name`` ("dynamodb", "dms", "s3", "stepfunctions")."""
    with _lock:
        if service_name not in _clients:
            _clients[service_name] = boto3.client(service_name, config=_CONFIG)  # type: ignore[call-overload]
        return _clients[service_name]


def reset_clients() -> None:
    """Forget every client, so the next call builds a new one (tests, changed endpoints)."""
    with _lock:
        _clients.clear()


def error_code(error: Exception) -> str:
    """The AWS error code of a botocore ``ClientError`` (empty for any other exception)."""
    response = getattr(error, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))
