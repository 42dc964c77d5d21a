"""Each acceptance check fails on what would break its aws-facts row, and names that row."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import boto3
from moto import mock_aws

from icetide_acceptance import checks
from icetide_acceptance.bronze import BronzeFile
from icetide_acceptance.facts import fact_rows, read_facts_page
from icetide_acceptance.iam_simulation import AllowListSimulator, Question
from icetide_acceptance.outcome import Status

FOLDER = "bronze/main_t/run/main/t"


def _file(
    name: str, ops: str, times: tuple[str, ...] = (), keys: tuple[Any, ...] = (), first: str = "Op"
) -> BronzeFile:
    return BronzeFile(f"{FOLDER}/{name}", first, tuple(ops), times, keys)


def test_every_check_names_a_row_of_the_facts_page_and_every_named_check_exists() -> None:
    page = read_facts_page()
    rows = fact_rows(page)
    assert set(checks.CHECKS.values()) <= set(rows)
    named = {
        name
        for row in rows.values()
        for name in re.findall(r"`([a-z-]+)` check", row.text.rsplit("|", 2)[-2])
    }
    assert named == set(checks.CHECKS), "the page's 'checked on AWS by' column and CHECKS disagree"


def test_load_files_counted_in_hexadecimal_pass() -> None:
    files = [_file(f"LOAD{n:08X}.parquet", "I") for n in range(1, 12)]  # ... LOAD0000000A, LOAD0000000B
    assert checks.cdc_files(files).status is Status.PASSED


def test_a_gap_in_the_load_counter_or_a_decimal_name_fails() -> None:
    gap = [_file("LOAD00000001.parquet", "I"), _file("LOAD00000003.parquet", "I")]
    decimal = [_file("LOAD1.parquet", "I")]
    assert checks.cdc_files(gap).status is Status.FAILED
    outcome = checks.cdc_files(decimal)
    assert (outcome.status, outcome.fact_id) == (Status.FAILED, "dms-file-names")


def test_cdc_files_whose_names_do_not_follow_commit_order_fail() -> None:
    earlier = _file("20261206-101500000.parquet", "U", ("2026-12-06 10:15:02.000000",))
    later = _file("20261206-101600000.parquet", "U", ("2026-12-06 10:15:01.000000",))
    assert checks.cdc_files([earlier, later]).status is Status.FAILED
    assert (
        checks.cdc_files(
            [later.__class__(later.key, "Op", ("U",), ("2026-12-06 10:15:03.000000",), ()), earlier]
        ).status
        is Status.PASSED
    )


def test_a_cdc_file_named_further_ahead_of_s3_than_the_allowance_fails() -> None:
    received = datetime(2026, 12, 6, 10, 15, tzinfo=UTC)
    ahead = replace(_file("20261206-103100000.parquet", "U"), last_modified=received)
    within = replace(_file("20261206-102900000.parquet", "U"), last_modified=received)
    outcome = checks.cdc_files([ahead])
    assert (outcome.status, outcome.detail) == (
        Status.FAILED,
        "20261206-103100000.parquet is named 0:16:00 after S3 received it",
    )
    assert checks.cdc_files([within]).status is Status.PASSED


def test_a_file_without_op_first_or_a_full_load_row_not_i_fails() -> None:
    assert checks.op_column([_file("LOAD00000001.parquet", "I", first="id")]).status is Status.FAILED
    assert checks.op_column([_file("LOAD00000001.parquet", "IU")]).status is Status.FAILED
    assert checks.op_column([_file("LOAD00000001.parquet", "II")]).status is Status.PASSED


def test_full_load_rows_must_equal_and_change_counters_bound_the_cdc_rows() -> None:
    files = [_file("LOAD00000001.parquet", "III"), _file("20261206-101500000.parquet", "UD")]
    equal = [{"FullLoadRows": 3, "Inserts": 0, "Updates": 1, "Deletes": 1}]
    more_changes = [{"FullLoadRows": 3, "Inserts": 0, "Updates": 2, "Deletes": 1}]
    fewer_changes = [{"FullLoadRows": 3, "Inserts": 0, "Updates": 0, "Deletes": 1}]
    other_load = [{"FullLoadRows": 4, "Inserts": 0, "Updates": 1, "Deletes": 1}]
    assert checks.counters(equal, files).status is Status.PASSED
    assert checks.counters(equal, files).detail.endswith("; equal per Op")
    # A filter can leave counted changes out of the files (aws-facts: dms-counters).
    assert checks.counters(more_changes, files).status is Status.PASSED
    outcome = checks.counters(fewer_changes, files)
    assert (outcome.status, outcome.detail) == (
        Status.FAILED,
        "Inserts+Updates+Deletes: statistics 1, fewer than the CDC rows 2",
    )
    outcome = checks.counters(other_load, files)
    assert (outcome.status, outcome.detail) == (
        Status.FAILED,
        "FullLoadRows: statistics 4, rows in LOAD files 3",
    )


def test_a_task_stopped_otherwise_or_missing_a_change_fails_the_stop_position() -> None:
    files = [_file("20261206-101500000.parquet", "UU", keys=(7, 8))]
    stopped = {"Status": "stopped", "StopReason": "Stop Reason STOPPED_AT_SERVER_TIME"}
    assert checks.stop_position(stopped, files, [7, 8]).status is Status.PASSED
    at_once = checks.stop_position(stopped, [], [7, 8])
    assert at_once.status is Status.FAILED
    assert "not read: keys [7, 8]" in at_once.detail
    failed = {"Status": "stopped", "StopReason": "Stop Reason FATAL_ERROR"}
    assert checks.stop_position(failed, files, [7, 8]).status is Status.FAILED
    assert checks.stop_position(None, files, [7]).status is Status.FAILED


def test_a_slot_task_without_a_start_position_fails() -> None:
    assert checks.slot({"Status": "stopped"}, "icetide_slot").status is Status.FAILED
    started = {"Status": "stopped", "CdcStartPosition": "0/16B3748"}
    assert checks.slot(started, "icetide_slot").status is Status.PASSED
    assert checks.slot(started, None).status is Status.NOT_APPLICABLE


def test_a_stale_full_load_row_or_a_deleted_key_back_in_silver_fails() -> None:
    source = {3: "changed", 4: "changed"}
    assert checks.full_load_ordering(source, {3: "changed", 4: "changed"}, [3, 4, 6]).status is Status.PASSED
    stale = checks.full_load_ordering(source, {3: "seed", 4: "changed"}, [3, 4])
    assert (stale.status, stale.detail) == (Status.FAILED, "key 3: source 'changed', silver 'seed'")
    back = checks.full_load_ordering(source, {3: "changed", 4: "changed", 6: "seed"}, [3, 4, 6])
    assert back.status is Status.FAILED
    assert checks.full_load_ordering(source, None, [3]).status is Status.NOT_APPLICABLE


def test_an_old_engine_version_fails() -> None:
    assert checks.engine_version({"EngineVersion": "3.4.6"}).status is Status.FAILED
    assert checks.engine_version({"EngineVersion": "3.4.7"}).status is Status.PASSED
    assert checks.engine_version({"EngineVersion": "3.5.4"}).status is Status.PASSED


def test_resources_left_behind_or_a_log_group_without_retention_fail() -> None:
    assert checks.cleanup(["arn:aws:dms:eu-west-1:1:task:x"]).status is Status.FAILED
    assert checks.cleanup([]).status is Status.PASSED
    forever = [{"logGroupName": "dms-tasks-i"}]
    assert checks.log_retention(forever, "i").status is Status.FAILED
    assert (
        checks.log_retention([{"logGroupName": "dms-tasks-i", "retentionInDays": 7}], "i").status
        is Status.PASSED
    )


@mock_aws
def test_a_role_without_pass_role_fails_the_iam_check() -> None:
    iam = boto3.client("iam", region_name="eu-west-1")
    trust = json.dumps({"Version": "2012-10-17", "Statement": []})
    arn = iam.create_role(RoleName="instance", AssumeRolePolicyDocument=trust)["Role"]["Arn"]
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["dms:Create*"], "Resource": "*"}],
    }
    iam.put_role_policy(RoleName="instance", PolicyName="p", PolicyDocument=json.dumps(policy))
    questions = [
        Question("dms:CreateReplicationInstance", "*", {}),
        Question("iam:PassRole", "*", {"iam:PassedToService": "dms.amazonaws.com"}),
    ]
    outcome = checks.iam_functions(AllowListSimulator(iam), {arn: questions})
    assert (outcome.status, outcome.detail) == (Status.FAILED, "instance lacks ['iam:PassRole']")
    assert checks.iam_functions(AllowListSimulator(iam), {arn: questions[:1]}).status is Status.PASSED


def _observed(start: str, fresh: str, changes: int) -> checks.TaskObservation:
    return checks.TaskObservation(
        {"ReplicationTaskStats": {"StartDate": start, "FreshStartDate": fresh}}, changes
    )


def test_a_resume_passes_under_either_reading_of_the_counters_and_says_which() -> None:
    stopped = _observed("2026-12-06T10:00:00", "2026-12-06T10:00:00", 7)

    reset = checks.counters_on_resume(stopped, _observed("2026-12-06T11:00:00", "2026-12-06T10:00:00", 2))
    kept = checks.counters_on_resume(stopped, _observed("2026-12-06T11:00:00", "2026-12-06T10:00:00", 9))

    assert (reset.status, reset.fact_id) == (Status.PASSED, "dms-counters-on-resume")
    assert reset.detail.endswith("reset") and "kept" in kept.detail and kept.status is Status.PASSED


def test_a_resume_that_keeps_the_start_date_or_moves_the_fresh_one_fails() -> None:
    stopped = _observed("2026-12-06T10:00:00", "2026-12-06T10:00:00", 7)

    same_start = checks.counters_on_resume(
        stopped, _observed("2026-12-06T10:00:00", "2026-12-06T10:00:00", 0)
    )
    fresh_moved = checks.counters_on_resume(
        stopped, _observed("2026-12-06T11:00:00", "2026-12-06T11:00:00", 0)
    )

    assert same_start.status is Status.FAILED and "StartDate" in same_start.detail
    assert fresh_moved.status is Status.FAILED and "FreshStartDate changed" in fresh_moved.detail
    assert checks.counters_on_resume(None, None).status is Status.NOT_APPLICABLE
