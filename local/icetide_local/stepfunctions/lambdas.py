"""Lambda functions served in-process by icetide's own handlers, inside moto.

moto's Lambda backend runs function code in Docker (none here) or only echoes the payload. The
harness replaces ``LambdaFunction.invoke`` so that a function whose ``Handler`` is
``handlers.acquire_lock.handler`` imports that module and calls it, with the function's configured
environment variables, as the Lambda runtime would. An exception becomes a function error the way
AWS reports one: the ``x-amz-function-error`` header and an ``{"errorType", "errorMessage",
"stackTrace"}`` payload, so the state machine's Retry and Catch match ``errorType``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import threading
import traceback
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

from moto.awslambda.models import LambdaFunction

from icetide_local.stepfunctions.faults import FaultPlan


@dataclass(frozen=True)
class LambdaContext:
    """The attributes of the Lambda runtime's context object that handlers and Powertools read."""

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    timeout_seconds: int
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = ""
    log_stream_name: str = "local"

    def get_remaining_time_in_millis(self) -> int:
        # The harness does not stop handlers; report the whole budget.
        return self.timeout_seconds * 1000


@dataclass(frozen=True)
class LambdaInvocation:
    """One invocation as the harness saw it (for reports and test failure messages)."""

    handler: str
    event: Any
    error_type: str | None


@dataclass
class InProcessLambdas:
    """Dispatches moto Lambda invocations to handler functions; :meth:`install` patches moto for a block."""

    faults: FaultPlan
    invocations: list[LambdaInvocation] = field(default_factory=list)
    # Handlers read their configuration from os.environ, which is process-wide: invocations take
    # turns so each sees its own function's variables.
    _environment_lock: threading.RLock = field(default_factory=threading.RLock)
    # The values the variables had before the first invocation set them, restored at the end.
    _saved_environment: dict[str, str | None] = field(default_factory=dict)

    @contextlib.contextmanager
    def install(self) -> Iterator[InProcessLambdas]:
        dispatcher = self

        def invoke(function: LambdaFunction, body: Any, request_headers: Any, response_headers: Any) -> bytes:
            return dispatcher.invoke(function, body, response_headers)

        try:
            with mock.patch.object(LambdaFunction, "invoke", invoke):
                yield self
        finally:
            self._restore_environment()

    def invoke(self, function: LambdaFunction, body: Any, response_headers: dict[str, str]) -> bytes:
        """Run ``function``'s handler on the JSON ``body``; return the response payload."""
        event = json.loads(body) if body else {}
        module_name, _, attribute = str(function.handler).rpartition(".")
        target = module_name.rpartition(".")[2]
        fault = self.faults.take(target)
        if fault is not None:
            self.invocations.append(LambdaInvocation(target, event, fault.error_type))
            return _function_error(response_headers, fault.error_type, fault.message, [])
        context = LambdaContext(
            function_name=function.function_name,
            invoked_function_arn=function.function_arn,
            memory_limit_in_mb=int(function.memory_size),
            timeout_seconds=int(function.timeout),
        )
        with self._environment(function.environment_vars):
            try:
                # Imported with the function's environment, as the Lambda runtime's init phase does:
                # Powertools reads its service name and metrics namespace at import.
                handler = getattr(importlib.import_module(module_name), attribute)
                result = handler(event, context)
            except Exception as error:  # every handler exception is a function error, as in AWS
                self.invocations.append(LambdaInvocation(target, event, type(error).__name__))
                stack_trace = traceback.format_tb(error.__traceback__)
                return _function_error(response_headers, type(error).__name__, str(error), stack_trace)
        try:
            payload = json.dumps(result)
        except (TypeError, ValueError) as error:
            self.invocations.append(LambdaInvocation(target, event, "Runtime.MarshalError"))
            message = f"Unable to marshal response: {error}"
            return _function_error(response_headers, "Runtime.MarshalError", message, [])
        self.invocations.append(LambdaInvocation(target, event, None))
        return payload.encode()

    @contextlib.contextmanager
    def _environment(self, variables: Mapping[str, str]) -> Iterator[None]:
        # Variables stay set between invocations, only their values change: other threads (boto3,
        # Spark) copy os.environ at any moment, and a key removed mid-copy raises KeyError there.
        with self._environment_lock:
            for name in variables:
                self._saved_environment.setdefault(name, os.environ.get(name))
            os.environ.update(variables)
            yield

    def _restore_environment(self) -> None:
        with self._environment_lock:
            for name, value in self._saved_environment.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            self._saved_environment.clear()


def _function_error(
    response_headers: dict[str, str], error_type: str, message: str, stack_trace: list[str]
) -> bytes:
    response_headers["x-amz-function-error"] = "Unhandled"
    return json.dumps({"errorType": error_type, "errorMessage": message, "stackTrace": stack_trace}).encode()
