"""Silver rows removed by position: the run writes Iceberg position delete files for the rows its
classification found, and commits them validated against the snapshot it read.

A position is only true in the snapshot it was read from: a commit by anything else since that
read (another writer, a compaction) must fail the run with main untouched, and the rerun must
classify again and land. Tables from before the sorted layout are bucketed: their delete files
must sit in their data files' partitions.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import icetide_glue.apply as apply_module
from glue.conftest import LoadRun
from glue.dms_files import write_dms_file
from glue.silver_tables import silver_table
from icetide_glue.errors import IcetideJobError
from icetide_glue.position_deletes import data_file_of

pytestmark = pytest.mark.spark

BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.int64())]
)
FIRST = [("I", "2026-11-21 06:00:00", key, key * 10) for key in range(1, 9)]
# Only changes of keys silver holds: one commit straight to main, no append, no branch.
ONLY_REMOVALS = [("D", "2026-11-21 07:00:00", 2, 20), ("D", "2026-11-21 07:00:00", 5, 50)]
AFTER_REMOVALS = {1: 10, 3: 30, 4: 40, 6: 60, 7: 70, 8: 80}


def _rows(spark: SparkSession, table: str) -> dict[int, int]:
    return {row["id"]: row["v"] for row in spark.table(silver_table(table)).select("id", "v").collect()}


def _main(spark: SparkSession, table: str) -> int:
    row = spark.sql(f"SELECT snapshot_id FROM {silver_table(table)}.refs WHERE name = 'main'").first()  # noqa: S608
    assert row is not None
    return int(row[0])


def _batches(tmp_path: Path, second_rows: list[tuple[str, str, int, int]]) -> tuple[Path, Path]:
    first, second = tmp_path / "first", tmp_path / "second"
    write_dms_file(first, "LOAD00000001.parquet", BRONZE, FIRST)
    write_dms_file(second, "20261121-070000000.parquet", BRONZE, second_rows)
    return first, second


def _before_removal(monkeypatch: pytest.MonkeyPatch, action: Callable[[], object]) -> None:
    """Run ``action`` just before the run writes its position deletes (after it read silver)."""
    real = apply_module.remove_rows

    def remove(*args: Any, **kwargs: Any) -> int:
        action()
        return real(*args, **kwargs)

    monkeypatch.setattr(apply_module, "remove_rows", remove)


def test_a_run_of_removals_only_commits_once_to_main_with_its_run_id(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    first, second = _batches(tmp_path, ONLY_REMOVALS)
    load_run("pos_only", "only-1", first)
    before = _main(spark, "pos_only")
    manifest = load_run("pos_only", "only-2", second)
    assert (manifest["rowsDeleted"], manifest["rowsUpdated"], manifest["rowsInserted"]) == (2, 0, 0)
    assert _rows(spark, "pos_only") == AFTER_REMOVALS
    head = spark.sql(
        f"SELECT parent_id, operation, summary['icetide.run-id'] AS run_id, "  # noqa: S608
        f"summary['added-position-deletes'] AS removed FROM {silver_table('pos_only')}.snapshots "
        f"WHERE snapshot_id = {manifest['snapshotId']}"
    ).first()
    assert head is not None
    assert (head["parent_id"], head["operation"], head["run_id"], head["removed"]) == (
        before,
        "delete",
        "only-2",
        "2",
    )
    assert manifest["snapshotId"] == _main(spark, "pos_only")


@pytest.mark.parametrize(
    "second_rows", [ONLY_REMOVALS, [*ONLY_REMOVALS, ("I", "2026-11-21 07:00:00", 9, 90)]]
)
def test_a_commit_by_another_writer_after_the_read_fails_the_removal_and_the_rerun_lands(
    spark: SparkSession,
    load_run: LoadRun,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    second_rows: list[tuple[str, str, int, int]],
) -> None:
    """Another writer's row (key 20) lands between the run's read and its removal: the positions
    may be stale, so the run fails (straight to main: the removal's validation; staged: the
    fast-forward, main no longer being the branch's ancestor) and main keeps only the other
    writer's commit."""
    name = f"pos_race_{len(second_rows)}"
    first, second = _batches(tmp_path, second_rows)
    load_run(name, "race-1", first)
    other_row = (
        spark.table(silver_table(name)).where("id = 1").withColumns({"id": F.lit(20), "v": F.lit(200)})
    )
    _before_removal(monkeypatch, lambda: other_row.writeTo(silver_table(name)).append())
    refusal = "Found conflicting files" if len(second_rows) == len(ONLY_REMOVALS) else "Cannot fast-forward"
    with pytest.raises(Exception, match=refusal):
        load_run(name, "race-2", second)
    assert _rows(spark, name) == {**{key: key * 10 for key in range(1, 9)}, 20: 200}

    monkeypatch.undo()
    load_run(name, "race-2", second)
    inserted = {9: 90} if len(second_rows) > len(ONLY_REMOVALS) else {}
    assert _rows(spark, name) == {**AFTER_REMOVALS, 20: 200, **inserted}


def test_a_compaction_after_the_read_fails_the_removal_and_the_rerun_lands(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compaction replaces the data files the positions point into (same rows, new files)."""
    first, second = _batches(tmp_path, ONLY_REMOVALS)
    load_run("pos_compacted", "compact-1", first)
    before = _main(spark, "pos_compacted")
    _before_removal(
        monkeypatch,
        lambda: spark.sql(
            "CALL local.system.rewrite_data_files(table => 'silver.pos_compacted', "
            "options => map('rewrite-all', 'true'))"
        ).collect(),
    )
    with pytest.raises(Exception, match=r"(?i)missing|deleted|validat|conflict"):
        load_run("pos_compacted", "compact-2", second)
    assert _main(spark, "pos_compacted") != before  # the compaction stands
    assert _rows(spark, "pos_compacted") == {key: key * 10 for key in range(1, 9)}

    monkeypatch.undo()
    manifest = load_run("pos_compacted", "compact-2", second)
    assert manifest["rowsDeleted"] == 2
    assert _rows(spark, "pos_compacted") == AFTER_REMOVALS


def test_a_bucketed_table_from_before_the_sorted_layout_gets_its_deletes_in_their_partitions(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    first, second = _batches(
        tmp_path,
        [
            *ONLY_REMOVALS,
            ("U", "2026-11-21 07:00:00", 7, 71),
            ("U", "2026-11-21 07:00:00", 8, 81),
            ("I", "2026-11-21 07:00:00", 9, 90),
        ],
    )
    load_run("pos_bucketed", "bucketed-1", first)
    spark.sql(f"ALTER TABLE {silver_table('pos_bucketed')} ADD PARTITION FIELD bucket(4, id)")
    # Rewritten under the bucket spec, as a table created by an earlier icetide was.
    spark.sql(
        "CALL local.system.rewrite_data_files(table => 'silver.pos_bucketed', "
        "options => map('rewrite-all', 'true'))"
    ).collect()
    manifest = load_run("pos_bucketed", "bucketed-2", second)
    assert (manifest["rowsDeleted"], manifest["rowsUpdated"], manifest["rowsInserted"]) == (2, 2, 1)
    assert _rows(spark, "pos_bucketed") == {**AFTER_REMOVALS, 7: 71, 8: 81, 9: 90}
    pairs = spark.sql(
        f"SELECT d.partition AS deleted_in, f.partition AS data_in "  # noqa: S608
        f"FROM {silver_table('pos_bucketed')}.delete_files d "
        f"JOIN {silver_table('pos_bucketed')}.data_files f ON d.referenced_data_file = f.file_path"
    ).collect()
    assert pairs and all(row["deleted_in"] == row["data_in"] for row in pairs)
    assert {row["data_in"][0] for row in pairs} != {None}


def test_a_written_delete_file_is_matched_to_its_data_file_by_its_folder() -> None:
    data_files = ["s3://b/t/data/a.parquet", "s3://b/t/data/b.parquet"]
    folder = "s3://b/t/data/icetide-position-deletes-1"
    assert data_file_of(f"{folder}/data_file_index=1/part-0.parquet", data_files) == data_files[1]
    assert data_file_of(f"{folder}/data_file_index=0/part-7.parquet", data_files) == data_files[0]
    for stray in (
        f"{folder}/part-0.parquet",
        f"{folder}/data_file_index=2/p.parquet",
        f"{folder}/data_file_index=x/p.parquet",
    ):
        with pytest.raises(IcetideJobError, match="not in a data file's folder"):
            data_file_of(stray, data_files)
