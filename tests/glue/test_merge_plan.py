"""How a merge run's plan is chosen (icetide_glue.merge.plan), from its arguments alone: no Spark."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from icetide_glue.arguments import DeleteMode, JobArguments, LoadMode, MergePlanChoice
from icetide_glue.errors import InvalidJobArguments
from icetide_glue.merge.plan import MergePlan, choose_merge_plan

SMALL = JobArguments(
    target_table="silver.orders",
    run_id="run-1",
    bronze_uri="s3://bronze/run-1/",
    primary_keys=("id",),
    expected_rows=0,
    max_change_rows=10,
    driver_merge_max_changes=100,
)
STARTED = datetime(2026, 11, 24, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(("exists", "reason"), [(True, "into an existing table"), (False, "first load")])
def test_a_small_hard_delete_merge_or_first_load_is_the_driver_s(exists: bool, reason: str) -> None:
    chosen = choose_merge_plan(SMALL, table_exists=exists, pyarrow=lambda: 21)
    assert (chosen.plan, chosen.forced) == (MergePlan.DRIVER, False)
    assert reason in chosen.reason


@pytest.mark.parametrize(
    ("args", "exists", "pyarrow", "reason"),
    [
        (replace(SMALL, max_change_rows=101), False, lambda: 21, "more than 100 changes"),
        (replace(SMALL, delete_mode=DeleteMode.SOFT), True, lambda: 21, "not a hard-delete merge"),
        (
            replace(SMALL, reconcile_uri="s3://bronze/keys/", reconcile_started_at=STARTED),
            True,
            lambda: 21,
            "a reconcile run",
        ),
        (SMALL, True, lambda: 14, "needs pyarrow 15 or later, found pyarrow 14"),
        (SMALL, True, lambda: None, "found no pyarrow"),
        (replace(SMALL, max_change_rows=101), True, lambda: 21, "more than 100 changes"),
        (replace(SMALL, driver_merge_max_changes=0), True, lambda: 21, "--driver_merge_max_changes 0"),
    ],
)
def test_any_other_run_is_spark_s_with_the_reason(
    args: JobArguments, exists: bool, pyarrow: Callable[[], int | None], reason: str
) -> None:
    chosen = choose_merge_plan(args, table_exists=exists, pyarrow=pyarrow)
    assert (chosen.plan, chosen.forced) == (MergePlan.SPARK, False)
    assert reason in chosen.reason


def test_the_argument_forces_a_plan_whatever_the_batch_s_size() -> None:
    large = replace(SMALL, max_change_rows=10_000)
    forced_driver = choose_merge_plan(replace(large, merge_plan=MergePlanChoice.DRIVER), True, lambda: 21)
    forced_spark = choose_merge_plan(replace(SMALL, merge_plan=MergePlanChoice.SPARK), True, lambda: 21)
    assert (forced_driver.plan, forced_driver.forced) == (MergePlan.DRIVER, True)
    assert (forced_spark.plan, forced_spark.forced) == (MergePlan.SPARK, True)


def test_a_forced_driver_plan_the_run_cannot_take_fails_naming_why() -> None:
    forced = replace(SMALL, merge_plan=MergePlanChoice.DRIVER, load_mode=LoadMode.APPEND)
    with pytest.raises(
        InvalidJobArguments, match="--merge_plan driver cannot merge this run: not a hard-delete"
    ):
        choose_merge_plan(forced, table_exists=True, pyarrow=lambda: 21)
    with pytest.raises(InvalidJobArguments, match="needs pyarrow 15 or later, found pyarrow 12"):
        choose_merge_plan(replace(SMALL, merge_plan=MergePlanChoice.DRIVER), True, pyarrow=lambda: 12)
