"""The acceptance checks: each judges what AWS did in the scenario against one docs/aws-facts.md row.

Checks are functions of plain data the scenario read through boto3 (task descriptions, table
statistics, a run's bronze files, IAM simulation answers), so the same checks judge a real account
and the dry run under moto. :data:`CHECKS` names every check with the row it verifies.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from itertools import pairwise
from typing import Any

from icetide_acceptance.bronze import CDC_NAME, LOAD_NAME, OP_COLUMN, BronzeFile
from icetide_acceptance.iam_simulation import PolicySimulator, Question
from icetide_acceptance.outcome import Outcome, failed, not_applicable, passed

# check name -> the id of the docs/aws-facts.md row it verifies
CHECKS = {
    "dms-cdc-files": "dms-file-names",
    "dms-op-column": "dms-include-op",
    "dms-counters": "dms-counters",
    "dms-counters-on-resume": "dms-counters-on-resume",
    "dms-stop-position": "dms-stop-position",
    "dms-slot": "dms-slot",
    "ordering-full-load": "dms-full-load-then-cdc",
    "iam-functions": "iam-dms-actions",
    "dms-engine-version": "dms-engine-version",
    "dms-cleanup": "dms-delete",
    "dms-log-retention": "logs-dms-group",
}
STOPPED_AT_POSITION = ("STOPPED_AT_SERVER_TIME", "STOPPED_AT_COMMIT_TIME")
# How far a CDC file's name may run ahead of S3's LastModified (aws-facts: dms-cdc-file-time; the
# allowance of icetide.run.bronze_selection).
NAME_AHEAD_OF_S3 = timedelta(minutes=15)
# What IncludeOpForFullLoad with parquet needs, the newest of the settings' minimums (aws-facts).
MINIMUM_ENGINE_VERSION = (3, 4, 7)


def _outcome(check: str, problems: Sequence[str], fine: str) -> Outcome:
    fact = CHECKS[check]
    return failed(check, fact, "; ".join(problems)) if problems else passed(check, fact, fine)


def cdc_files(files: Sequence[BronzeFile]) -> Outcome:
    """LOAD files count 1, 2, ... in hexadecimal per table folder; CDC files are named by time, no
    later than S3 received them (within the allowance), and their names sort in the order of the
    commit times they hold."""
    problems: list[str] = []
    folders: dict[str, list[BronzeFile]] = defaultdict(list)
    for file in files:
        folders[file.key.rsplit("/", 1)[0]].append(file)
    for folder, inside in sorted(folders.items()):
        counters = []
        for file in inside:
            load = LOAD_NAME.fullmatch(file.name)
            if load:
                counters.append(int(load.group(1), 16))
            elif not CDC_NAME.fullmatch(file.name):
                problems.append(f"{file.key}: neither LOAD{{8 hex digits}} nor yyyyMMdd-HHmmssSSS")
        if sorted(counters) != list(range(1, len(counters) + 1)):
            problems.append(f"{folder}: LOAD counters {sorted(counters)} are not 1..{len(counters)}")
        for file in inside:
            named = file.named_time
            if named and file.last_modified and named > file.last_modified + NAME_AHEAD_OF_S3:
                problems.append(f"{file.name} is named {named - file.last_modified} after S3 received it")
        changes = sorted((file for file in inside if not file.is_load and file.times), key=lambda f: f.name)
        for before, after in pairwise(changes):
            if max(before.times) > min(after.times):
                problems.append(
                    f"{after.name} holds a commit time ({min(after.times)}) before one of {before.name} "
                    f"({max(before.times)}): file names do not give commit order"
                )
    return _outcome("dms-cdc-files", problems, f"{len(files)} file(s) named and ordered as documented")


def op_column(files: Sequence[BronzeFile]) -> Outcome:
    """Every file, full load included (IncludeOpForFullLoad), has Op first; full-load rows are I."""
    problems = [
        f"{file.key}: first column {file.first_column!r}" for file in files if file.first_column != OP_COLUMN
    ]
    problems += [
        f"{file.key}: full-load Op values {sorted(set(file.ops))}"
        for file in files
        if file.is_load and set(file.ops) - {"I"}
    ]
    return _outcome("dms-op-column", problems, f"Op first in {len(files)} file(s)")


def counters(statistics: Iterable[Mapping[str, Any]], files: Sequence[BronzeFile]) -> Outcome:
    """DescribeTableStatistics against the rows in the files, as icetide compares them: FullLoadRows
    ("rows added during the full load") equals the full-load rows; Inserts + Updates + Deletes
    ("actions performed", which a filter can leave out of the files) is at least the CDC rows. The
    detail says whether the CDC counters also equal the rows per Op, which AWS does not document."""
    counted: Counter[str] = Counter()
    for table in statistics:
        for name in ("FullLoadRows", "Inserts", "Updates", "Deletes"):
            counted[name] += int(table.get(name, 0) or 0)
    in_files = Counter(
        FullLoadRows=sum(len(file.ops) for file in files if file.is_load),
        Inserts=sum(file.ops.count("I") for file in files if not file.is_load),
        Updates=sum(file.ops.count("U") for file in files if not file.is_load),
        Deletes=sum(file.ops.count("D") for file in files if not file.is_load),
    )
    changes = ("Inserts", "Updates", "Deletes")
    counted_changes, written = sum(counted[n] for n in changes), sum(in_files[n] for n in changes)
    loaded = in_files["FullLoadRows"]
    problems = []
    if counted["FullLoadRows"] != loaded:
        problems.append(f"FullLoadRows: statistics {counted['FullLoadRows']}, rows in LOAD files {loaded}")
    if counted_changes < written:
        problems.append(
            f"Inserts+Updates+Deletes: statistics {counted_changes}, fewer than the CDC rows {written}"
        )
    per_op = (
        "equal per Op" if all(counted[n] == in_files[n] for n in changes) else f"statistics {dict(counted)}"
    )
    return _outcome("dms-counters", problems, f"rows in files {dict(in_files)}; {per_op}")


@dataclass(frozen=True)
class TaskObservation:
    """A task as described (``DescribeReplicationTasks``) with its table's Inserts + Updates +
    Deletes (``DescribeTableStatistics``), read one after the other."""

    task: Mapping[str, Any]
    changes: int


def _stats_date(task: Mapping[str, Any], name: str) -> Any:
    return (task.get("ReplicationTaskStats") or {}).get(name)


def counters_on_resume(stopped: TaskObservation | None, resumed: TaskObservation | None) -> Outcome:
    """What a ``resume-processing`` start did: ``StartDate`` must change and ``FreshStartDate`` stay
    (documented); the detail says which undocumented reading of the counters holds, reset (fewer
    changes after the resume than when stopped) or kept. Either passes: icetide's change count is
    right under both. ``stopped`` is the task before the resume, ``resumed`` after it counted again."""
    fact = CHECKS["dms-counters-on-resume"]
    if stopped is None or resumed is None:
        return not_applicable("dms-counters-on-resume", fact, "the scenario resumed no task")
    problems = []
    before, after = stopped.task, resumed.task
    if _stats_date(before, "StartDate") == _stats_date(after, "StartDate"):
        problems.append(f"StartDate {_stats_date(after, 'StartDate')!r} did not change with the resume")
    if _stats_date(before, "FreshStartDate") != _stats_date(after, "FreshStartDate"):
        problems.append(
            f"FreshStartDate changed with the resume ({_stats_date(before, 'FreshStartDate')!r} -> "
            f"{_stats_date(after, 'FreshStartDate')!r})"
        )
    reading = "reset" if resumed.changes < stopped.changes else "kept (or more changes since)"
    return _outcome(
        "dms-counters-on-resume",
        problems,
        f"changes counted {stopped.changes} when stopped, {resumed.changes} after the resume: {reading}",
    )


def stop_position(
    task: Mapping[str, Any] | None, files: Sequence[BronzeFile], changed_keys: Iterable[Any]
) -> Outcome:
    """A windowed CDC task stopped at its stop position, having read the changes committed before it."""
    if task is None:
        return failed("dms-stop-position", CHECKS["dms-stop-position"], "the run's cdc task was never seen")
    problems = []
    reason = str(task.get("StopReason") or "")
    if not any(position in reason for position in STOPPED_AT_POSITION):
        problems.append(f"StopReason {reason!r} (status {task.get('Status')!r}), not a stop position")
    read = {key for file in files if not file.is_load for key in file.keys}
    missing = sorted({*changed_keys} - read, key=str)
    if missing:
        problems.append(f"changes committed before the stop position not read: keys {missing}")
    return _outcome("dms-stop-position", problems, f"stopped with {reason!r}, every change before it read")


def slot(task: Mapping[str, Any] | None, slot_name: str | None) -> Outcome:
    """On a slot endpoint, the task carries a CdcStartPosition from its creation and did not fail."""
    fact = CHECKS["dms-slot"]
    if not slot_name:
        return not_applicable(
            "dms-slot", fact, "the source endpoint names no slot (PostgreSQL with SlotName only)"
        )
    if task is None:
        return failed("dms-slot", fact, "the run's task was never seen")
    problems = []
    if not task.get("CdcStartPosition"):
        problems.append("the task was created without CdcStartPosition")
    if task.get("Status") == "failed" or task.get("LastFailureMessage"):
        problems.append(f"the task failed: {task.get('LastFailureMessage')!r}")
    return _outcome(
        "dms-slot", problems, f"slot {slot_name}: start position {task.get('CdcStartPosition')!r}"
    )


def full_load_ordering(
    source_rows: Mapping[Any, Any], silver_rows: Mapping[Any, Any] | None, changed_keys: Iterable[Any]
) -> Outcome:
    """Each key changed while the full load ran holds in silver what the source holds (a deleted key
    is absent from both): the full load's stale row did not win over the later change. No keys: the
    full load ended before the scenario saw it running, so nothing was changed during it."""
    fact = CHECKS["ordering-full-load"]
    changed_keys = list(changed_keys)
    if not changed_keys:
        return not_applicable(
            "ordering-full-load",
            fact,
            "the full load had ended when first seen (more rows: ICETIDE_ACCEPTANCE_ROWS)",
        )
    if silver_rows is None:
        return not_applicable(
            "ordering-full-load", fact, "silver cannot be read here (no Glue job writes it)"
        )
    problems = [
        f"key {key}: source {source_rows.get(key)!r}, silver {silver_rows.get(key)!r}"
        for key in sorted(set(changed_keys), key=str)
        if source_rows.get(key) != silver_rows.get(key)
    ]
    return _outcome("ordering-full-load", problems, "every change made during the full load won in silver")


def iam_functions(simulator: PolicySimulator, needs: Mapping[str, Sequence[Question]]) -> Outcome:
    """Each function's role is allowed every action its calls need (role ARN -> questions)."""
    problems = []
    for role, actions in sorted(needs.items()):
        denied = simulator.denied(role, actions)
        if denied:
            problems.append(f"{role.rsplit('/', 1)[-1]} lacks {sorted(denied)}")
    return _outcome("iam-functions", problems, f"{len(needs)} role(s) allowed every action they need")


def engine_version(instance: Mapping[str, Any] | None) -> Outcome:
    """The run's replication instance runs an engine version the S3 settings need."""
    if instance is None:
        return failed("dms-engine-version", CHECKS["dms-engine-version"], "the run's instance was never seen")
    version = str(instance.get("EngineVersion") or "")
    parts = tuple(int(part) for part in version.split(".") if part.isdigit())
    problems = [] if parts >= MINIMUM_ENGINE_VERSION else [f"engine version {version!r} is older than 3.4.7"]
    return _outcome("dms-engine-version", problems, f"engine version {version}")


def cleanup(remaining: Sequence[str]) -> Outcome:
    """Nothing the run created in DMS is left once it ended."""
    problems = [f"still there: {arn}" for arn in remaining]
    return _outcome("dms-cleanup", problems, "the run's task, endpoint and instance are gone")


def log_retention(groups: Sequence[Mapping[str, Any]], instance_identifier: str | None) -> Outcome:
    """DMS's task log group of the run's instance exists with a retention."""
    wanted = f"dms-tasks-{instance_identifier}"
    found = [group for group in groups if group.get("logGroupName") == wanted]
    if not found:
        return failed("dms-log-retention", CHECKS["dms-log-retention"], f"no log group {wanted}")
    days = found[0].get("retentionInDays")
    problems = [] if days else [f"{wanted} keeps its events for ever"]
    return _outcome("dms-log-retention", problems, f"{wanted} keeps {days} day(s)")
