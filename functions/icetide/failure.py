"""The readable cause of a failed run, from whatever the state machine's Catch hands over.

A Catch passes ``{"Error": name, "Cause": text}``. For a Lambda task the Cause is itself JSON
(``{"errorType", "errorMessage", "stackTrace", ...}``); for a Glue job run it is the job run as JSON
(with ``ErrorMessage``). Operators want the message, not the envelope, in ``lastRunError``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# lastRunError is an attribute of a DynamoDB item (400 KB at most); a cause this long is noise anyway.
MAX_MESSAGE_LENGTH = 4000
_MESSAGE_KEYS = ("errorMessage", "ErrorMessage", "message", "Message")


def failure_message(cause: str | Mapping[str, Any] | None) -> str:
    """One line an operator can read: ``"<Error>: <message>"``, or the message alone."""
    if cause is None:
        return "unknown failure (no cause given)"
    if isinstance(cause, str):
        message = _message_in(cause)
    else:
        error = _text(cause.get("Error", cause.get("error")))
        detail = _message_in(_text(cause.get("Cause", cause.get("cause"))))
        message = f"{error}: {detail}" if error and detail else error or detail
    return _shorten(message or "unknown failure (empty cause)")


def _text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _message_in(text: str) -> str:
    """The message inside a JSON error document, or the text itself when it is not one."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return stripped
    try:
        document = json.loads(stripped)
    except json.JSONDecodeError:
        return stripped
    for key in _MESSAGE_KEYS:
        value = document.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return stripped


def _shorten(message: str) -> str:
    if len(message) <= MAX_MESSAGE_LENGTH:
        return message
    return message[: MAX_MESSAGE_LENGTH - 1] + "…"
