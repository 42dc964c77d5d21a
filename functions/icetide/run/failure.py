"""The readable cause of a failed run, from whatever the state machine's Catch hands over.

A Catch passes ``{"Error": name, "Cause": text}``. For a Lambda task the Cause is itself JSON
(``{"errorType", "errorMessage", "stackTrace", ...}``); for a Glue job run it is the job run as JSON
(with ``ErrorMessage``). Operators want the message, not the envelope, in ``lastRunError``.

A failed Glue job arrives as ``States.TaskFailed``, which says nothing about what went wrong. The
job's message starts with its error's name (``UnreadableBronzeFile: s3://…``, see
``glue_jobs/bronze_to_silver.py``), so that name replaces ``States.TaskFailed``: the record reads
``UnreadableBronzeFile: …`` like a Lambda error reads ``DmsQuotaExceeded: …``. Glue may put its own
``Error Category: …; Failed Line Number: …;`` fields first and may prefix the class name itself;
both are taken off.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# lastRunError is an attribute of a DynamoDB item (400 KB at most); a cause this long is noise anyway.
MAX_MESSAGE_LENGTH = 4000
_MESSAGE_KEYS = ("errorMessage", "ErrorMessage", "message", "Message")
# The Step Functions error of every failed task that is not a Lambda error (Glue's among them).
_TASK_FAILED = "States.TaskFailed"
# Glue's own "Title Case Field: value;" fields before the exception (several words: a class name
# is one), then the exception's class name (possibly dotted) and message.
_GLUE_FIELDS = re.compile(r"^(?:[A-Z][a-z]+(?: [A-Z][a-z]+)+: [^;]*;\s*)+")
_NAMED_MESSAGE = re.compile(
    r"^(?:[A-Za-z_][A-Za-z0-9_]*\.)*(?P<name>[A-Z][A-Za-z0-9_]*): (?P<message>.+)$", re.DOTALL
)


def failure_message(cause: str | Mapping[str, Any] | None) -> str:
    """One line an operator can read: ``"<Error>: <message>"``, or the message alone."""
    if cause is None:
        return "unknown failure (no cause given)"
    if isinstance(cause, str):
        message = _message_in(cause)
    else:
        error = _text(cause.get("Error", cause.get("error")))
        detail = _message_in(_text(cause.get("Cause", cause.get("cause"))))
        if error == _TASK_FAILED:
            error, detail = _named_error(detail) or (error, detail)
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


def _named_error(message: str) -> tuple[str, str] | None:
    """``(name, message)`` when a task's message starts with an error name (after Glue's fields),
    with a repeated name taken off; None when it does not."""
    found = _NAMED_MESSAGE.match(_GLUE_FIELDS.sub("", message, count=1))
    if found is None:
        return None
    name, rest = found["name"], found["message"].strip()
    return name, rest.removeprefix(f"{name}: ").strip()


def _shorten(message: str) -> str:
    if len(message) <= MAX_MESSAGE_LENGTH:
        return message
    return message[: MAX_MESSAGE_LENGTH - 1] + "…"
