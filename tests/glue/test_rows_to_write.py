"""The rows a run appends: each changing change's own values, except a soft delete that keeps silver's.

The commit removes the silver rows its changes replace and appends these rows instead, so for a
soft delete that must keep silver's values (its image is older than silver's row, or it has
none), silver's values come from the classification (``_icetide_silver_value_<i>``), with the
delete's own change time and deletion time.
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

from glue.frames import assert_frame_equal
from icetide_glue.columns import ACTION, CHANGE_TS, DELETED_AT, MATCHED, TAKE_IMAGE, silver_value_column
from icetide_glue.merge.apply import ChangeCounts, ClassifiedChanges, rows_to_write

pytestmark = pytest.mark.spark

SILVER = ["id", "note", CHANGE_TS, DELETED_AT]
LABELLED = StructType(
    [
        StructField("id", LongType()),
        StructField("note", StringType()),
        StructField(CHANGE_TS, StringType()),  # text here: only carried through
        StructField(DELETED_AT, StringType()),
        StructField(ACTION, StringType()),
        StructField(MATCHED, BooleanType()),
        StructField(TAKE_IMAGE, BooleanType()),
        StructField(silver_value_column(0), StringType()),
    ]
)
LABELS = [
    (1, "new", "t1", None, "insert", False, None, None),
    (2, "u2", "t2", None, "update", True, None, "old2"),
    (3, "image3", "t3", "t3", "delete", True, True, "old3"),
    (4, None, "t4", "t4", "delete", True, False, "old4"),  # a keys-only delete with an older image
    (5, "x5", "t5", "t5", "delete", True, None, "old5"),
    (6, "same", "t6", None, "unchanged", True, None, "same"),
    (7, "image7", "t7", "t7", "delete", False, True, None),  # a soft delete of a key silver lacks
]
OUT = StructType([LABELLED[name] for name in SILVER])


def _classified(spark: SparkSession) -> ClassifiedChanges:
    frame = spark.createDataFrame(LABELS, LABELLED)
    return ClassifiedChanges(frame=frame, counts=ChangeCounts(), compared=["note"])


def test_a_soft_delete_that_does_not_take_its_image_writes_silver_s_values(spark: SparkSession) -> None:
    rows = rows_to_write(_classified(spark), SILVER, soft_delete=True)
    assert_frame_equal(
        rows,
        [
            (1, "new", "t1", None),
            (2, "u2", "t2", None),
            (3, "image3", "t3", "t3"),
            (4, "old4", "t4", "t4"),
            (5, "old5", "t5", "t5"),  # no say (null) keeps silver's values, as the MERGE did
            (7, "image7", "t7", "t7"),
        ],
        OUT,
    )


def test_hard_deletes_write_no_row(spark: SparkSession) -> None:
    rows = rows_to_write(_classified(spark), SILVER, soft_delete=False)
    assert_frame_equal(rows, [(1, "new", "t1", None), (2, "u2", "t2", None)], OUT)
