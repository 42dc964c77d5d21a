"""The driver path's lookups by key, held to plain Python oracles over seeded random cases: which
row of silver and which tombstone entry each change meets (arrow_labels: a binary search for one
whole-number key, a hash join otherwise), which of a row group's keys a batch wants
(arrow_silver), and when a batch needs no deduplication (arrow_batch). No Spark."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from icetide_glue.columns import CHANGE_PHASE, CHANGE_SEQ, CHANGE_TS, FILE_RANK, ROW_INDEX
from icetide_glue.driver.arrow_types import NotEligible
from icetide_glue.driver.batch import _latest_per_key, _one_change_per_key
from icetide_glue.driver.labels import SILVER_SIDE, TOMBSTONE_SIDE, _joined
from icetide_glue.driver.silver import _among
from seeds import EachSeed


def _rows(keys: list[int], key_type: pa.DataType, **columns: list[Any]) -> pa.Table:
    return pa.table({"id": pa.array(keys, key_type), **columns})


def _oracle_side(changes: list[int], rows: dict[int, Any]) -> list[Any]:
    return [rows.get(key) for key in changes]


@pytest.mark.parametrize("composite", [False, True])
def test_each_change_meets_its_key_s_row_and_entry_or_none(
    composite: bool,
    each_seed: EachSeed,
) -> None:
    """``composite`` adds a second key column (always 0), which takes the hash join instead."""

    def check(seed: int) -> None:
        _each_change_meets_its_key_s_row_and_entry_or_none(seed=seed, composite=composite)

    each_seed(range(12), check)


def _each_change_meets_its_key_s_row_and_entry_or_none(
    seed: int,
    composite: bool,
) -> None:
    rng = random.Random(seed)
    key_type = rng.choice([pa.int32(), pa.int64()])
    # Negative keys as often as positive ones.
    universe = rng.sample(
        range(-(2**31), 2**31 - 1) if key_type == pa.int32() else range(-(2**61), 2**61), 40
    )
    changes = rng.sample(universe, rng.randint(0, 25))
    silver = {key: rng.randint(0, 9) for key in rng.sample(universe, rng.randint(0, 30))}
    tombstones = {key: rng.randint(0, 9) for key in rng.sample(universe, rng.randint(0, 10))}
    keys = ["id", "k2"] if composite else ["id"]

    def table(keyed: list[int], **columns: list[Any]) -> pa.Table:
        found = _rows(keyed, key_type, **columns)
        return found.append_column("k2", pa.array([0] * len(keyed), pa.int8())) if composite else found

    silver_keys = rng.sample(list(silver), len(silver))  # in no order
    silver_rows = table(silver_keys, v=pa.array([silver[k] for k in silver_keys], pa.int64()))
    tombstone_keys = list(tombstones)
    tombstone_rows = table(
        tombstone_keys, **{CHANGE_TS: pa.array([tombstones[k] for k in tombstone_keys], pa.int64())}
    )
    if key_type == pa.int32() and not composite and rng.random() < 0.5:
        # Rows whose key column is wider than the changes' (both are cast alike today; not relied on).
        silver_rows = silver_rows.set_column(0, "id", silver_rows.column("id").cast(pa.int64()))
    joined = _joined(table(changes), silver_rows, tombstone_rows, keys)
    assert joined.column(SILVER_SIDE + "v").to_pylist() == _oracle_side(changes, silver)
    assert joined.column(TOMBSTONE_SIDE + CHANGE_TS).to_pylist() == _oracle_side(changes, tombstones)


@pytest.mark.parametrize("composite", [False, True])
def test_a_key_with_two_silver_rows_is_not_for_the_driver(composite: bool) -> None:
    keys = ["id", "k2"] if composite else ["id"]

    def table(keyed: list[int], **columns: list[Any]) -> pa.Table:
        found = _rows(keyed, pa.int64(), **columns)
        return found.append_column("k2", pa.array([0] * len(keyed), pa.int8())) if composite else found

    with pytest.raises(NotEligible, match="more than one live silver row"):
        _joined(
            table([1, 2]),
            table([2, 5, 2], v=[1, 2, 3]),
            table([], **{CHANGE_TS: pa.array([], pa.int64())}),
            keys,
        )


def test_a_row_group_s_wanted_keys_are_its_keys_in_the_batch(
    each_seed: EachSeed,
) -> None:
    def check(seed: int) -> None:
        _a_row_group_s_wanted_keys_are_its_keys_in_the_batch(seed=seed)

    each_seed(range(20), check)


def _a_row_group_s_wanted_keys_are_its_keys_in_the_batch(
    seed: int,
) -> None:
    rng = random.Random(seed)
    wanted = sorted(set(rng.sample(range(-(2**40), 2**40), rng.randint(1, 60))))
    found = [rng.choice(wanted) if rng.random() < 0.5 else rng.randint(-(2**40), 2**40) for _ in range(80)]
    ordered = np.array(wanted, dtype=np.int64)
    keep = _among(pa.chunked_array([pa.array(found, pa.int64())]), pa.array(wanted, pa.int64()), ordered)
    assert keep.tolist() == [value in set(wanted) for value in found]


def test_a_row_group_with_a_null_key_or_decimal_keys_is_hashed_as_before() -> None:
    found = pa.chunked_array([pa.array([3, None, 7], pa.int64())])
    assert _among(found, pa.array([3, 5], pa.int64()), np.array([3, 5])).tolist() == [True, False, False]
    wanted = pa.array([Decimal(-4), Decimal(9)], pa.decimal128(10, 0))
    found = pa.chunked_array([pa.array([Decimal(9), Decimal(4), Decimal(-4)], pa.decimal128(10, 0))])
    ordered = wanted.to_numpy(zero_copy_only=False)
    assert _among(found, wanted, ordered).tolist() == [True, False, True]


def test_a_batch_keeps_each_key_s_latest_change(
    each_seed: EachSeed,
) -> None:
    """Unique keys come back as they are; a repeated key takes the sort, latest change kept: by
    phase first (docs/glue-job.md "Ordering": every CDC change, phase 1, after every full-load row,
    phase 0, whatever their times), then by time, then by position."""

    def check(seed: int) -> None:
        _a_batch_keeps_each_key_s_latest_change(seed=seed)

    each_seed(range(30), check)


def _a_batch_keeps_each_key_s_latest_change(
    seed: int,
) -> None:
    rng = random.Random(seed)
    rows = rng.randint(1, 30)
    ids = [rng.randint(1, 40) for _ in range(rows)] if seed % 2 else rng.sample(range(1, 100), rows)
    times = [rng.randint(0, 3) for _ in range(rows)]
    phases = [rng.randint(0, 1) for _ in range(rows)]
    changes = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            CHANGE_TS: pa.array(times, pa.int64()),
            CHANGE_SEQ: pa.nulls(rows, pa.string()),
            CHANGE_PHASE: pa.array(phases, pa.int32()),
            FILE_RANK: pa.array(["1a"] * rows),
            ROW_INDEX: pa.array(range(rows), pa.int64()),
        }
    )
    latest: dict[int, tuple[int, int, int]] = {}
    for index, (key, time, phase) in enumerate(zip(ids, times, phases, strict=True)):
        if key not in latest or (phase, time, index) > latest[key]:
            latest[key] = (phase, time, index)
    assert _one_change_per_key(changes, ["id"]) == (len(set(ids)) == len(ids))
    kept = _latest_per_key(changes, ["id"])
    assert sorted(
        zip(kept.column("id").to_pylist(), kept.column(ROW_INDEX).to_pylist(), strict=True)
    ) == sorted((key, index) for key, (_, _, index) in latest.items())
    assert not _one_change_per_key(changes.append_column("k2", pa.array([0] * rows)), ["id", "k2"])
