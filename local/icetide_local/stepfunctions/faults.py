"""Failures a test injects into the harness, per target, to drive the state machine's Retry and Catch.

A target is a handler module name (``"commit_watermark"``: that Lambda fails before the handler
runs) or :data:`SNS_PUBLISH` (moto's SNS refuses to publish). A fault fires ``times`` times and
then lets calls through: ``times=1`` with a retried error name is a transient failure, ``times=None``
fails every call (a hard failure).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from moto.sns import models as sns_models
from moto.sns.exceptions import SNSException

SNS_PUBLISH = "sns:publish"


@dataclass(frozen=True)
class Fault:
    """One injected failure.

    For a Lambda target, ``error_type`` is the function error's ``errorType``, the name Step
    Functions matches in ``ErrorEquals`` (e.g. ``"DmsResourceBusy"``, ``"Lambda.ServiceException"``).
    For :data:`SNS_PUBLISH` it is the AWS error code (``"InternalError"`` reaches the state machine
    as ``SNS.InternalErrorException``).
    """

    error_type: str = "InjectedFailure"
    message: str = "failure injected by the local stack"
    times: int | None = 1

    def __post_init__(self) -> None:
        if self.times is not None and self.times < 1:
            raise ValueError(f"Fault.times must be 1 or more, or None for always; got {self.times}")


@dataclass
class FaultPlan:
    """The faults of one harness; safe to use from moto's execution threads."""

    _pending: dict[str, Fault] = field(default_factory=dict)
    _remaining: dict[str, int | None] = field(default_factory=dict)
    fired: list[tuple[str, Fault]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def inject(self, target: str, fault: Fault | None = None) -> Fault:
        """Make ``target`` fail (replacing any fault it had); returns the fault."""
        fault = fault or Fault()
        with self._lock:
            self._pending[target] = fault
            self._remaining[target] = fault.times
        return fault

    def take(self, target: str) -> Fault | None:
        """The fault ``target`` must raise on this call, or None; counts the call against ``times``."""
        with self._lock:
            fault = self._pending.get(target)
            if fault is None:
                return None
            remaining = self._remaining[target]
            if remaining is not None:
                if remaining == 1:
                    del self._pending[target]
                self._remaining[target] = remaining - 1
            self.fired.append((target, fault))
            return fault


def failing_sns_publish(faults: FaultPlan) -> Any:
    """A patch of moto's SNS (a context manager) that makes it refuse a publish when told to."""
    publish = sns_models.SNSBackend.publish

    def guarded_publish(self: Any, *args: Any, **kwargs: Any) -> Any:
        fault = faults.take(SNS_PUBLISH)
        if fault is not None:
            raise SNSException(fault.error_type, fault.message)
        return publish(self, *args, **kwargs)

    return mock.patch.object(sns_models.SNSBackend, "publish", guarded_publish)
