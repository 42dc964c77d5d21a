"""The acceptance IAM check asks, for each DMS-calling function, about exactly the DMS, IAM and
CloudWatch Logs actions that function's code calls for (the template test's reading of the code)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from deploy.aws_calls import CodeIndex
from deploy.iam_reference import permissions_for
from deploy.template_model import icetide_functions
from icetide_acceptance.iam_simulation import RUN_NEEDS

FUNCTIONS_ROOT = Path(__file__).resolve().parents[2] / "functions"
CHECKED_PREFIXES = {"dms", "iam", "logs"}


@cache
def code_index() -> CodeIndex:
    return CodeIndex(FUNCTIONS_ROOT)


def derived_actions(index: CodeIndex, function_name: str) -> set[str]:
    """The DMS, IAM and Logs actions the function's handler's calls need."""
    module, _, handler = icetide_functions()[function_name]["Properties"]["Handler"].rpartition(".")
    return {
        permission.action
        for call in index.calls_from(module, handler)
        for permission in permissions_for(call)
        if permission.action.split(":", 1)[0] in CHECKED_PREFIXES
    }


@pytest.mark.parametrize("function_name", sorted(RUN_NEEDS))
def test_the_check_asks_about_every_action_the_function_calls_need(function_name: str) -> None:
    asked = {need.action for need in RUN_NEEDS[function_name]}
    assert asked == derived_actions(code_index(), function_name)


def test_every_function_that_calls_dms_is_checked() -> None:
    index = code_index()
    calling_dms = {
        name
        for name in icetide_functions()
        if any(action.startswith("dms:") for action in derived_actions(index, name))
    }
    # The cleanup of runs that end outside the state machine, the sweep, continuous tasks, a
    # continuous run's file selection (it reads its task's counters) and StartWorkflow (retiring a
    # table's continuous task) act on resources the scenario's windowed runs do not have; the
    # scenario checks the six functions a windowed run calls.
    assert set(RUN_NEEDS) <= calling_dms
    assert calling_dms - set(RUN_NEEDS) == {
        "CleanUpExecutionFunction",
        "EnsureContinuousTaskFunction",
        "SelectBronzeFilesFunction",
        "StartWorkflowFunction",
        "SweepDmsResourcesFunction",
    }
