"""`icetide job run --merge-plan` reaches the Glue job's `merge_plan` argument; argparse refuses a
value that is not a plan. The arguments are built as `icetide job run` builds them, without Spark."""

from __future__ import annotations

import contextlib
import io

import pytest

from icetide_cli.job import runs_arguments
from icetide_cli.main import build_parser
from icetide_glue.arguments import MergePlanChoice

COMMAND = ["job", "run", "--bronze", "b", "--warehouse", "w", "--table", "silver.t", "--keys", "id"]


@pytest.mark.parametrize(
    ("given", "plan"),
    [
        ([], MergePlanChoice.AUTO),
        (["--merge-plan", "auto"], MergePlanChoice.AUTO),
        (["--merge-plan", "driver"], MergePlanChoice.DRIVER),
        (["--merge-plan", "spark"], MergePlanChoice.SPARK),
    ],
)
def test_the_merge_plan_option_becomes_the_jobs_merge_plan(given: list[str], plan: MergePlanChoice) -> None:
    [args] = runs_arguments(build_parser().parse_args([*COMMAND, *given]))

    assert args.merge_plan is plan


def test_every_folder_of_a_command_gets_the_plan() -> None:
    command = [*COMMAND, "--bronze", "c", "--merge-plan", "spark"]

    plans = [args.merge_plan for args in runs_arguments(build_parser().parse_args(command))]

    assert plans == [MergePlanChoice.SPARK, MergePlanChoice.SPARK]


@pytest.mark.parametrize("value", ["local", "DRIVER", ""])
def test_a_value_that_is_not_a_plan_is_refused_by_the_parser(value: str) -> None:
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors), pytest.raises(SystemExit) as refused:
        build_parser().parse_args([*COMMAND, "--merge-plan", value])

    assert refused.value.code == 2
    assert "--merge-plan: invalid choice" in errors.getvalue()
    assert "'auto', 'driver', 'spark'" in errors.getvalue()
