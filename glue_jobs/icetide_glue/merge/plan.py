"""Which engine merges a run: the one place the job chooses (:func:`choose_merge_plan`).

A plan is a member of :class:`MergePlan`; the job's argument ``--merge_plan`` forces one or lets
the job choose (``auto``). More plans join the enumeration as the job learns them, each chosen
here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from importlib import metadata

from icetide_glue.arguments import DeleteMode, JobArguments, LoadMode, MergePlanChoice
from icetide_glue.errors import InvalidJobArguments

# The oldest pyarrow whose features the driver path uses (concat_tables' promote_options, in
# icetide_glue.driver.batch); pyproject.toml's spark extra pins the same.
MIN_PYARROW_MAJOR = 15


class MergePlan(StrEnum):
    """How a merge run is carried out. The value is what the commit's snapshot summary records
    (``icetide.merge-path``)."""

    # Every stage in the driver's process, without a Spark job (icetide_glue.driver.merge): a
    # batch whose changes and planned read of silver are small, a small first load too.
    DRIVER = "driver"
    # Every stage as Spark jobs: any run.
    SPARK = "spark"


@dataclass(frozen=True)
class Chosen:
    """A plan and whether the argument forced it: a forced plan that cannot carry the run fails
    it with the reason; a chosen one gives way to :attr:`MergePlan.SPARK`."""

    plan: MergePlan
    forced: bool
    reason: str


def pyarrow_major() -> int | None:
    """The installed pyarrow's major version (None: not installed)."""
    try:
        return int(metadata.version("pyarrow").split(".", 1)[0])
    except metadata.PackageNotFoundError:
        return None


def choose_merge_plan(
    args: JobArguments, table_exists: bool, pyarrow: Callable[[], int | None] = pyarrow_major
) -> Chosen:
    """The plan of one run, from its arguments and what is known before its bronze is read:
    whether silver exists and the installed pyarrow's major version (``pyarrow``: finds it)."""
    driver_refusal = _driver_refusal(args, pyarrow)
    if args.merge_plan is MergePlanChoice.SPARK:
        return Chosen(MergePlan.SPARK, True, "--merge_plan spark")
    if args.merge_plan is MergePlanChoice.DRIVER:
        if driver_refusal is not None:
            raise InvalidJobArguments(f"--merge_plan driver cannot merge this run: {driver_refusal}")
        return Chosen(MergePlan.DRIVER, True, "--merge_plan driver")
    if driver_refusal is not None:
        return Chosen(MergePlan.SPARK, False, driver_refusal)
    if args.driver_merge_max_changes == 0:
        return Chosen(
            MergePlan.SPARK, False, "merges on the driver are turned off (--driver_merge_max_changes 0)"
        )
    bound = args.bronze_rows_bound
    if bound is not None and bound > args.driver_merge_max_changes:
        return Chosen(MergePlan.SPARK, False, f"more than {args.driver_merge_max_changes} changes")
    what = "a small merge into an existing table" if table_exists else "a small first load"
    return Chosen(MergePlan.DRIVER, False, what)


def _driver_refusal(args: JobArguments, pyarrow: Callable[[], int | None]) -> str | None:
    """Why the driver path cannot take the run, as far as its arguments say (None: it may; the
    path itself checks the batch and the table, or the table a first load would create, before
    writing)."""
    if args.load_mode is not LoadMode.MERGE or args.delete_mode is not DeleteMode.HARD:
        return "not a hard-delete merge"
    if args.reconcile_uri is not None:
        return "a reconcile run"
    major = pyarrow()
    if major is None or major < MIN_PYARROW_MAJOR:
        found = "no pyarrow" if major is None else f"pyarrow {major}"
        return f"the driver path needs pyarrow {MIN_PYARROW_MAJOR} or later, found {found}"
    return None
