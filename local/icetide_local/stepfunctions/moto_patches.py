"""Fixes for the two bugs of moto 5.2.5's Step Functions interpreter that the table-run machine hits.

Both are patched here and nowhere else, only while the harness (and so the local stack) runs
(:func:`patched_moto`), together with five speed-ups (3., 5., 6., 7. and 8.) and, when the harness is given a
time scale below 1, the interpreter's shortened pauses (:func:`scaled_pauses`):

1. ``arn:aws:states:::glue:startJobRun.sync`` always fails. moto 5.2.5's
   ``StateTaskServiceCallback._eval_integration_pattern`` ends with
   ``callback_endpoint.interrupt_all()``, but Glue supports only ``.sync``, so there is no callback
   endpoint and the call raises ``AttributeError: 'NoneType' object has no attribute
   'interrupt_all'``. :func:`_glue_sync_integration_pattern` is the same evaluation for ``.sync``
   without the endpoint.
2. ``describe_execution`` of a succeeded execution whose output holds a datetime (a Glue job run's
   ``StartedOn``, kept when a state stores the whole ``GetJobRun`` result) fails: moto 5.2.5 keeps
   the output as Python objects and ``json.dumps`` them without a datetime encoder.
   :func:`_reflect_with_json_output` stores the output as JSON-safe values (datetimes as ISO-8601
   strings, as AWS returns them).
3. Not a bug: ``create_state_machine`` validates a definition by parsing it with moto's ANTLR
   parser (over a second for this definition), and every test's stack creates the same one.
   :func:`_validate_once` remembers the texts that passed; a failing text is parsed (and refused)
   every time.

4. A local-vs-AWS difference, off unless asked for (``TableRunHarness(time_scale=...)``): the
   interpreter's own pauses last ``time_scale`` times as long as AWS's. Those are a Wait state's
   seconds, a Retrier's interval (IntervalSeconds, BackoffRate, MaxDelaySeconds as declared) and
   the pause between two checks of a ``.sync`` Glue job run (moto's
   ``_DELAY_SECONDS_SYNC_CONDITION_CHECK``). The execution's history and the states' data keep the
   declared seconds, and a retry still happens as often as declared. Timeouts (a state's or the
   execution's TimeoutSeconds) stay in real seconds: they bound work the handlers and stand-ins do
   in real time.
5. Not a bug: each execution parses its definition again with the same ANTLR parser (moto's
   ``ExecutionWorker._get_evaluation_entrypoint``), as costly as the validation of 3., for every run.
   :func:`_program_of` keeps the parsed program per definition text: its components hold the
   definition only, and an execution's state lives in its own ``Environment``.
6. Not a bug: an SNS subscription signs each message it delivers to SQS with an RSA key that moto
   generates per subscription, and every stack subscribes its notification queue anew.
   :func:`_signing_key` is one key for the process; nothing here checks the signatures.
7. Not a bug: every Task state's call (a Lambda invocation, Glue's StartJobRun and each ``.sync``
   check, SNS, DynamoDB) creates a new boto3 client (moto's ``boto_client_for``), which costs more
   than the call. :func:`_shared_clients` keeps one client per Region and service while the block
   runs (boto3 clients are thread-safe; moto's function ignores a state's credentials too).
8. Not a bug: every JSONPath the interpreter evaluates (a state's paths, a Parameters ``.$``
   field, a Choice variable, a context path) parses its text again, and jsonpath-ng builds a new
   PLY parser for each parse. :func:`_parsed_json_paths` keeps the parsed expression per text, as
   3. and 5. keep a definition's: an expression holds the path only (finding or updating works on
   the data it is given), and the texts are those of the definitions.

Re-check all of these when moto is upgraded; drop a patch once moto fixes the bug.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

from cryptography.hazmat.primitives.asymmetric import rsa
from moto.sns.models import Subscription
from moto.stepfunctions.parser.asl.component.common.path import result_path
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_callback
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_glue import (
    StateTaskServiceGlue,
)
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction
from moto.stepfunctions.parser.asl.eval.environment import Environment
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
from moto.stepfunctions.parser.asl.utils import boto_client, json_path
from moto.stepfunctions.parser.asl.utils.encoding import to_json_str
from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication
from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker
from moto.stepfunctions.parser.models import StepFunctionsParserBackend


@contextlib.contextmanager
def patched_moto() -> Iterator[None]:
    """Apply the fixes (and the speed-ups) for the duration of the block."""
    reflect = BaseExecutionWorkerCommunication._reflect_execution_status
    with (
        mock.patch.object(StateTaskServiceGlue, "_eval_integration_pattern", _glue_sync_integration_pattern),
        mock.patch.object(
            BaseExecutionWorkerCommunication, "_reflect_execution_status", _reflect_with_json_output(reflect)
        ),
        mock.patch.object(StepFunctionsParserBackend, "_validate_definition", staticmethod(_validate_once)),
        mock.patch.object(ExecutionWorker, "_get_evaluation_entrypoint", _parsed_entrypoint),
        mock.patch.object(Subscription, "private_key", _signing_key),
        _shared_clients(),
        _parsed_json_paths(),
    ):
        yield


@contextlib.contextmanager
def _parsed_json_paths() -> Iterator[None]:
    with contextlib.ExitStack() as patches:
        for module in (json_path, result_path):
            parse = functools.cache(module.parse)
            patches.enter_context(mock.patch.object(module, "parse", parse))
        yield


@contextlib.contextmanager
def _shared_clients() -> Iterator[None]:
    # Each module of the interpreter imported boto_client_for by name: patch it where it was imported.
    create = boto_client.boto_client_for
    clients: dict[tuple[str, str], Any] = {}
    lock = threading.Lock()

    def shared_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        with lock:
            if (region, service) not in clients:
                clients[region, service] = create(region, service)
            return clients[region, service]

    importers = [
        module
        for name, module in list(sys.modules.items())
        if name.startswith("moto.stepfunctions.parser") and getattr(module, "boto_client_for", None) is create
    ]
    with contextlib.ExitStack() as patches:
        for module in importers:
            patches.enter_context(mock.patch.object(module, "boto_client_for", shared_client_for))
        yield


# Each .sync check asks the Glue stand-in for the run through moto: checked more often than this, a
# job run of a few seconds costs more CPU in checks than the pause saves, on a 2-core machine.
MIN_SYNC_CHECK_SECONDS = 0.05


@contextlib.contextmanager
def scaled_pauses(time_scale: float) -> Iterator[None]:
    """For the duration of the block, the interpreter's pauses (Wait states, Retrier intervals, the
    ``.sync`` check interval) last ``time_scale`` times their declared length (4. above)."""
    if not 0 < time_scale <= 1:
        raise ValueError(f"a time scale shortens pauses: 0 < time_scale <= 1, got {time_scale}")
    sync_check = state_task_service_callback._DELAY_SECONDS_SYNC_CONDITION_CHECK

    def sleep(seconds: float) -> None:
        time.sleep(seconds * time_scale)

    def wait_interval(self: WaitFunction, env: Environment, wait_seconds: int) -> None:
        # moto's own re-waits in whole seconds after an interrupt, which a fraction never reaches.
        deadline = time.monotonic() + wait_seconds * time_scale
        while env.is_running() and (remaining := deadline - time.monotonic()) > 0:
            env.program_state_event.wait(remaining)

    with (
        # RetrierDecl._eval_body sleeps through its module's `time`, and only there.
        mock.patch.object(retrier_decl, "time", types.SimpleNamespace(sleep=sleep)),
        mock.patch.object(WaitFunction, "_wait_interval", wait_interval),
        mock.patch.object(
            state_task_service_callback,
            "_DELAY_SECONDS_SYNC_CONDITION_CHECK",
            max(sync_check * time_scale, MIN_SYNC_CHECK_SECONDS),
        ),
    ):
        yield


_VALIDATE_DEFINITION = StepFunctionsParserBackend._validate_definition


@functools.lru_cache(maxsize=32)
def _validate_once(definition: str) -> None:
    # lru_cache does not remember calls that raise, so an invalid definition is always refused.
    _VALIDATE_DEFINITION(definition)


def _parsed_entrypoint(self: ExecutionWorker) -> EvalComponent:
    return _program_of(self._evaluation_details.state_machine_details.definition)


@functools.lru_cache(maxsize=32)
def _program_of(definition: str) -> EvalComponent:
    program: EvalComponent = AmazonStateLanguageParser.parse(definition)[0]
    return program


def _signing_key(self: Subscription) -> rsa.RSAPrivateKey:
    return _process_signing_key()


@functools.cache
def _process_signing_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _glue_sync_integration_pattern(
    self: StateTaskServiceGlue,
    env: Any,
    resource_runtime_part: Any,
    normalised_parameters: dict[str, Any],
    state_credentials: Any,
) -> None:
    # The stack's top is StartJobRun's output, which the sync resolver pops to learn the run id.
    self.timeout.eval(env=env)
    timeout_seconds = env.stack.pop()
    sync_resolver = self._build_sync_resolver(
        env=env,
        resource_runtime_part=resource_runtime_part,
        normalised_parameters=normalised_parameters,
        state_credentials=state_credentials,
    )
    # Raises (FailureEventException) when the job run ends FAILED, TIMEOUT or ERROR.
    outcome = self._eval_sync(
        env=env,
        sync_resolver=sync_resolver,
        timeout_seconds=timeout_seconds,
        callback_endpoint=None,
        heartbeat_endpoint=None,
    )
    env.stack.append(outcome)


def _reflect_with_json_output(
    reflect: Callable[[BaseExecutionWorkerCommunication], None],
) -> Callable[[BaseExecutionWorkerCommunication], None]:
    def _reflect_execution_status(self: BaseExecutionWorkerCommunication) -> None:
        reflect(self)
        if self.execution.output is not None:
            self.execution.output = json.loads(to_json_str(self.execution.output))

    return _reflect_execution_status
