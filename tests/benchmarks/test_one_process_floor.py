"""benchmarks/one_process_floor.py's pieces without Spark, each against a plain-Python oracle:
each key's latest change, and silver's live rows of a key range with their positions (row groups
skipped by statistics, delete files applied). The whole of it runs in the merge_cost smoke test,
where its positions must equal the Spark floor's."""

from __future__ import annotations

import random
from pathlib import Path
from types import ModuleType

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from seeds import EachSeed


def dms_time(second: int) -> str:
    return f"2026-11-30 {second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.{second % 7:06d}"


def test_each_key_keeps_its_latest_change(one_process_floor: ModuleType, each_seed: EachSeed) -> None:
    each_seed([1, 2, 3], lambda seed: _keeps_the_latest_change(one_process_floor, seed))


def _keeps_the_latest_change(one_process_floor: ModuleType, seed: int) -> None:
    rng = random.Random(seed)
    rows = []
    for key in rng.sample(range(10_000), 300):
        # Distinct change times per key (DMS's strings), one to four changes each, in any order.
        for second in rng.sample(range(80_000), rng.randint(1, 4)):
            rows.append((key, dms_time(second), f"v{key}-{second}"))
    rng.shuffle(rows)
    changes = pa.table(
        {
            "id": [r[0] for r in rows],
            "dms_timestamp": [r[1] for r in rows],
            "name": [r[2] for r in rows],
        }
    )

    latest = one_process_floor.latest_changes(changes, "id", "dms_timestamp")

    newest: dict[int, tuple[str, str]] = {}
    for key, stamp, name in rows:
        if key not in newest or stamp > newest[key][0]:
            newest[key] = (stamp, name)
    assert sorted(
        zip(*latest.select(["id", "dms_timestamp", "name"]).to_pydict().values(), strict=True)
    ) == sorted((key, stamp, name) for key, (stamp, name) in newest.items())


def test_the_live_rows_of_a_key_range_carry_their_positions(
    one_process_floor: ModuleType, tmp_path: Path, each_seed: EachSeed
) -> None:
    each_seed(
        [1, 2], lambda seed: _live_rows_carry_positions(one_process_floor, tmp_path / f"seed-{seed}", seed)
    )


def _live_rows_carry_positions(one_process_floor: ModuleType, tmp_path: Path, seed: int) -> None:
    tmp_path.mkdir()
    rng = random.Random(seed)
    keys = sorted(rng.sample(range(100_000), 5_000))
    data_file = tmp_path / "data.parquet"
    pq.write_table(pa.table({"id": keys, "amount": [key * 3 for key in keys]}), data_file, row_group_size=400)
    path = f"file:{data_file}"
    deleted = set(rng.sample(range(len(keys)), 600))
    other = set(rng.sample(range(len(keys)), 50))  # another data file's positions, in the same delete file
    delete_file = tmp_path / "deletes.parquet"
    entries = sorted([(path, pos) for pos in deleted] + [("file:/elsewhere.parquet", pos) for pos in other])
    pq.write_table(
        pa.table(
            {"file_path": [e[0] for e in entries], "pos": pa.array([e[1] for e in entries], pa.int64())}
        ),
        delete_file,
    )
    low = rng.randrange(70_000)
    high = low + 20_000  # a fifth of the keys: about 3 of the 13 row groups
    planned = one_process_floor.PlannedFile(path, (f"file://{delete_file}",))

    parts = list(one_process_floor.rows_in_range(planned, 7, ["id", "amount"], "id", low, high))

    found = (
        pa.concat_tables(parts).to_pydict()
        if parts
        else {"id": [], "amount": [], "_file_index": [], "_pos": []}
    )
    expected = [
        (key, key * 3, 7, pos) for pos, key in enumerate(keys) if low <= key <= high and pos not in deleted
    ]
    assert (
        list(zip(found["id"], found["amount"], found["_file_index"], found["_pos"], strict=True)) == expected
    )
    # Row groups wholly outside the range are not read.
    assert len(parts) <= 5


def test_the_key_s_statistics_are_found_by_leaf_after_a_nested_column(
    one_process_floor: ModuleType, tmp_path: Path
) -> None:
    """A struct of two leaves before the key: the key is leaf 2, not the Arrow field index 1."""
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"pair": [{"a": 1, "b": 2}], "id": [10]}), path)
    parquet = pq.ParquetFile(path)
    assert one_process_floor.leaf_index(parquet, "id") == 2
    assert parquet.metadata.row_group(0).column(2).statistics.min == 10
    with pytest.raises(KeyError, match="pair is not a flat column"):
        one_process_floor.leaf_index(parquet, "pair")
