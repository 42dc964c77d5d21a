"""Column names icetide adds to, or reads from, the DMS output.

Silver tables carry a few metadata columns next to the source columns: the change's commit time
and sequence (so a later run can refuse an older change) and the run that wrote the row. The
``_icetide_`` prefix is reserved: a source column using it is rejected rather than overwritten.
"""

from __future__ import annotations

from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from icetide_contracts.bronze_files import CDC_PHASE as CDC_PHASE
from icetide_contracts.bronze_files import FULL_LOAD_PHASE as FULL_LOAD_PHASE

RESERVED_PREFIX = "_icetide_"

# What DMS writes: the operation (I/U/D) is always called Op.
DMS_OP_COLUMN = "Op"

# Stored in silver.
CHANGE_TS = "_icetide_change_ts"
CHANGE_SEQ = "_icetide_change_seq"
RUN_ID = "_icetide_run_id"
# Stored in merge tables and their tombstone tables: the phase of the DMS task the change came
# from, FULL_LOAD_PHASE (a LOAD file: its time is DMS's transfer time, on the replication
# instance's clock) or CDC_PHASE (a CDC file: the source's commit time). The two clocks cannot be
# compared: an arriving full-load row beats what silver holds, a CDC change beats a stored
# full-load row, CDC against CDC goes by time (sql.order_guard). Null in rows written before the
# column existed and in reconcile deletes: those are ordered by time alone.
CHANGE_PHASE = "_icetide_change_phase"
# Stored only in append-only tables, where a D row is kept as a fact rather than applied.
OP = "_icetide_op"
# Stored only in append-only tables: the SHA-256 of a row's content, so a re-read row is not appended
# again (append_once.py).
ROW_HASH = "_icetide_row_hash"

# Stored only in merge tables with hard deletes: an 8-byte hash of a row's source columns other than
# the keys (sql.values_hash_sql), so a run tells a re-read row from a changed one by reading this
# column of silver instead of every value column. Null in rows written before the column existed,
# in rows a soft delete wrote, and in tables whose only columns are keys or that have a struct,
# array or map column (apply.values_hash_types): those are compared by their values.
VALUES_HASH = "_icetide_values_hash"

# Stored only in merge tables loaded with --delete_mode soft: the change time of the delete that
# removed the row at the source (null while the row lives).
DELETED_AT = "_icetide_deleted_at"

# Working columns of one run, never stored.
FILE_RANK = "_icetide_file_rank"
ROW_INDEX = "_icetide_row_index"
ACTION = "_icetide_action"
IN_SILVER = "_icetide_in_silver"
IN_TOMBSTONES = "_icetide_in_tombstones"
# True when silver holds the change's key: the run removes silver's row (and appends the change's).
MATCHED = "_icetide_matched"
# Where silver holds a matched key's row (Iceberg's _file and _pos of the row the classification
# read): the run removes that row by position (icetide_glue.merge.position_deletes).
SILVER_FILE = "_icetide_silver_file"
SILVER_POS = "_icetide_silver_pos"
# With soft deletes: silver's value of each compared column (by position), which a soft delete
# that keeps silver's values writes back (silver_value_column).
SILVER_VALUE_PREFIX = "_icetide_silver_value_"
# True when the key's order memory (the tombstone table) already has an entry: a change to
# remember moves that entry forward; the others are appended to the tombstone table.
HAS_TOMBSTONE = "_icetide_has_tombstone"
# True for a change the key's order memory (the tombstone table) must keep: a delete, or an update
# skipped as unchanged, newer than everything silver and the memory know of its key.
KEEP_TOMBSTONE = "_icetide_keep_tombstone"
# True when a change carries values of the row: its own (an I, a U, a D with DMS's before-image),
# or, for a keys-only D (PostgreSQL's default before-image), those of the key's latest change in
# the batch that had values. IMAGE_TS / IMAGE_SEQ / IMAGE_PHASE: the change time, sequence and
# phase of those values.
HAS_IMAGE = "_icetide_has_image"
IMAGE_TS = "_icetide_image_ts"
IMAGE_SEQ = "_icetide_image_seq"
IMAGE_PHASE = "_icetide_image_phase"
# True when a soft delete keeps the change's values (newer than silver's and the tombstone's),
# false when it keeps silver's.
TAKE_IMAGE = "_icetide_take_image"

MERGE_METADATA = StructType(
    [
        StructField(CHANGE_TS, TimestampType()),
        StructField(CHANGE_SEQ, StringType()),
        StructField(RUN_ID, StringType()),
    ]
)
PHASE_FIELD = StructField(CHANGE_PHASE, IntegerType())
HARD_DELETE_METADATA = StructType([*MERGE_METADATA.fields, StructField(VALUES_HASH, LongType()), PHASE_FIELD])
SOFT_DELETE_METADATA = StructType(
    [*MERGE_METADATA.fields, StructField(DELETED_AT, TimestampType()), PHASE_FIELD]
)
APPEND_METADATA = StructType(
    [*MERGE_METADATA.fields, StructField(OP, StringType()), StructField(ROW_HASH, BinaryType())]
)

# Operations as DMS spells them.
INSERT, UPDATE, DELETE = "I", "U", "D"


def silver_value_column(index: int) -> str:
    """The working column holding silver's value of the ``index``-th compared column."""
    return f"{SILVER_VALUE_PREFIX}{index}"


def is_metadata_column(name: str) -> bool:
    """True for icetide's own columns (stored or working), whatever the case."""
    return name.lower().startswith(RESERVED_PREFIX)


# The tombstone table's own columns after the key columns (a stored layout: icetide_glue.silver
# creates the table with them, the merges write them).
TOMBSTONE_COLUMNS = (CHANGE_TS, CHANGE_SEQ, OP, RUN_ID, CHANGE_PHASE)
