"""benchmarks/values_hash.py end to end at a tiny size: both widths measured, both classifications
label alike, and the check that guards them does fail when the hash is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from icetide_glue.columns import VALUES_HASH

pytestmark = pytest.mark.spark


def arguments(tmp_path: Path, *widths: str) -> list[str]:
    return [
        "--rows", "3000",
        "--rounds", "1",
        "--fraction", "0.1",
        "--widths", *widths,
        "--workspace", str(tmp_path / "workspace"),
        "--json", str(tmp_path / "results.json"),
    ]  # fmt: skip


def test_both_widths_are_measured_and_label_alike(
    spark: SparkSession, values_hash_benchmark: ModuleType, tmp_path: Path
) -> None:
    assert values_hash_benchmark.main(arguments(tmp_path, "narrow", "wide")) == 0

    document = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert document["command"][0] == "benchmarks/values_hash.py" and document["spark"] == spark.version
    results = document["results"]
    assert [result["width"] for result in results] == ["narrow", "wide"]
    # id, 3 or 16 value columns, then icetide's 5 metadata columns (change time, sequence, run id,
    # values hash, change phase).
    assert [result["columns"] for result in results] == [9, 22]
    for result in results:
        assert result["same_labels"] is True and result["differing_labels"] == 0
        # Even keys changed their name, odd keys were re-read unchanged.
        unchanged = result["odd_keys"]
        for found in result["labels"].values():
            assert found == {"unchanged": unchanged, "update": result["changes"] - unchanged}
        assert 0 < unchanged < result["changes"]
        assert all(len(times) == 1 and times[0] > 0 for times in result["seconds"].values())


def test_a_wrong_hash_fails_the_run(
    spark: SparkSession,
    values_hash_benchmark: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The batch's hash of a constant: every change looks updated to the hash classification.
    def constant_hash(changes: DataFrame, value_types: object) -> DataFrame:
        return changes.withColumn(VALUES_HASH, F.xxhash64(F.lit("same")))

    monkeypatch.setattr(values_hash_benchmark, "with_values_hash", constant_hash)
    assert values_hash_benchmark.main(arguments(tmp_path, "narrow")) == 1
    assert "narrow: labels differ for " in capsys.readouterr().out
