"""DataFrame → DataFrame transforms from DMS rows to the changes silver receives.

DMS spells a change with its own columns (``Op``, the TimestampColumnName string, optionally a
change sequence); these become icetide's metadata columns, and the rest are the source columns.

Those columns decide the order of changes, in this run and against every later one (silver keeps
them), so only the types DMS writes are accepted: a bigint "timestamp" cast to a time would land
in year 294247 and make every later change to those keys look older, for good.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DataType,
    DecimalType,
    IntegerType,
    IntegralType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)
from pyspark.sql.window import WindowSpec

from icetide_glue.bronze.read import rank_phase
from icetide_glue.columns import (
    CHANGE_PHASE,
    CHANGE_SEQ,
    CHANGE_TS,
    DELETE,
    DELETED_AT,
    DMS_OP_COLUMN,
    FILE_RANK,
    HAS_IMAGE,
    IMAGE_PHASE,
    IMAGE_SEQ,
    IMAGE_TS,
    INSERT,
    OP,
    ROW_INDEX,
    RUN_ID,
    is_metadata_column,
)
from icetide_glue.decision import LATEST_CHANGE_ORDER
from icetide_glue.errors import BronzeSchemaError
from icetide_glue.session import SESSION_TIME_ZONE, session_settings
from icetide_glue.sql_text import quote_identifier

_LATEST = "_icetide_latest"
_IMAGE = "_icetide_image"
# Working columns a change keeps when aligned to silver (for the classification and the commit).
_CHANGE_WORKING_COLUMNS = (OP, HAS_IMAGE, IMAGE_TS, IMAGE_SEQ, IMAGE_PHASE)
# DMS's TimestampColumnName format, yyyy-MM-dd HH:mm:ss.SSSSSS (fractions optional, at most
# microseconds). Spark's cast alone also accepts "2026", "2026-11" or a T, and reads those as times.
DMS_TIMESTAMP_PATTERN = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?$"


def column(name: str) -> Column:
    """A column by its exact name, even if the name holds dots or spaces."""
    return F.col(quote_identifier(name))


def find_column(columns: Sequence[str], name: str) -> str | None:
    """The actual spelling of ``name`` among ``columns`` (Spark resolves names case-insensitively)."""
    wanted = name.lower()
    return next((candidate for candidate in columns if candidate.lower() == wanted), None)


def require_column(columns: Sequence[str], name: str, role: str) -> str:
    """Like :func:`find_column`, but a missing column is a :class:`BronzeSchemaError` naming its role."""
    found = find_column(columns, name)
    if found is None:
        listed = ", ".join(c for c in columns if not is_metadata_column(c))
        raise BronzeSchemaError(f"the {role} {name!r} is not in the bronze files (their columns: {listed})")
    return found


def utc_timestamp(text: Column) -> Column:
    """A ``yyyy-MM-dd HH:mm:ss[.ffffff]`` string without zone, read as UTC.

    Appending ``Z`` makes the parse independent of the session time zone. An unparseable value
    becomes null.
    """
    return F.concat(F.trim(text), F.lit("Z")).cast(TimestampType())


def change_time(dms_timestamp: Column, is_string: bool) -> Column:
    """DMS's ``yyyy-MM-dd HH:mm:ss.SSSSSS`` string (UTC, without saying so) as a timestamp; a
    string in any other form becomes null, which the batch check rejects. A timestamp column
    (with or without zone) is taken as it is.

    Both casts read the zone of the session that analyzes them, which must be UTC
    (:func:`normalize_changes` analyzes them so). The string is not given a ``Z`` as
    :func:`utc_timestamp` does: Spark then parses the zone of every row, several times the cost
    of the plain cast, and a batch of one file is read by one task, where that cost is not
    spread over cores."""
    if not is_string:
        return dms_timestamp.cast(TimestampType())
    text = F.trim(dms_timestamp)
    return F.when(text.rlike(DMS_TIMESTAMP_PATTERN), text.cast(TimestampType()))


def check_dms_column_types(schema: StructType, timestamp: str, op: str | None, sequence: str | None) -> None:
    """Refuse, naming the column and its type, a DMS column of a type DMS never writes.

    The timestamp (TimestampColumnName) is a string, or a timestamp where the files were
    converted; the Op a string; the change sequence (``AR_H_CHANGE_SEQ``) a string of digits, or a
    whole number where a source or a transformation gives one. Anything else (a bigint or boolean
    timestamp, a float or date sequence) means the column is not what its name says.
    """
    problems = []
    timestamp_type = schema[timestamp].dataType
    if not isinstance(timestamp_type, StringType | TimestampType | TimestampNTZType):
        problems.append(
            f"the DMS timestamp column (--timestamp_column) {timestamp!r} is "
            f"{timestamp_type.simpleString()}, not a 'yyyy-MM-dd HH:mm:ss[.SSSSSS]' string or a timestamp"
        )
    if op is not None and not isinstance(schema[op].dataType, StringType):
        problems.append(
            f"the DMS column {op!r} is {schema[op].dataType.simpleString()}, not a string of I, U or D"
        )
    if sequence is not None and not _is_sequence_type(schema[sequence].dataType):
        problems.append(
            f"the change sequence column (--change_sequence_column) {sequence!r} is "
            f"{schema[sequence].dataType.simpleString()}, not a string of digits or a whole number"
        )
    if problems:
        raise BronzeSchemaError(
            "; ".join(problems) + ": these columns order the changes (in silver too, for every later "
            "run), so a mistyped one is refused; check the DMS endpoint's settings or the column names"
        )


def is_whole_number_type(data_type: DataType) -> bool:
    """An integral type, or a decimal without fraction digits."""
    whole_decimal = isinstance(data_type, DecimalType) and data_type.scale == 0
    return isinstance(data_type, IntegralType) or whole_decimal


def _is_sequence_type(data_type: DataType) -> bool:
    return isinstance(data_type, StringType) or is_whole_number_type(data_type)


def normalize_changes(
    bronze: DataFrame, timestamp_column: str, change_sequence_column: str, run_id: str
) -> DataFrame:
    """Replace DMS's Op / timestamp / sequence columns by icetide's metadata columns.

    Full-load rows without an Op (no ``IncludeOpForFullLoad``, or a blank value) are inserts.
    Each row's phase (full load or CDC) comes from its file's name (the file rank), which is kept
    with the row position for ordering. DMS columns
    of a type DMS never writes are refused (:func:`check_dms_column_types`).
    """
    ts_name = require_column(bronze.columns, timestamp_column, "DMS timestamp column (--timestamp_column)")
    op_name = find_column(bronze.columns, DMS_OP_COLUMN)
    seq_name = find_column(bronze.columns, change_sequence_column)
    check_dms_column_types(bronze.schema, ts_name, op_name, seq_name)
    dms_columns = {name for name in (ts_name, op_name, seq_name) if name is not None}
    source_columns = [
        name for name in bronze.columns if name not in dms_columns and not is_metadata_column(name)
    ]
    op = F.lit(INSERT)
    if op_name is not None:
        op = F.coalesce(F.nullif(F.trim(column(op_name)), F.lit("")), F.lit(INSERT))
    is_string = isinstance(bronze.schema[ts_name].dataType, StringType)
    sequence = (
        sortable_sequence(column(seq_name), bronze.schema[seq_name].dataType)
        if seq_name is not None
        else F.lit(None).cast(StringType())
    )
    # Analyzed now, in UTC: each cast to a timestamp keeps the zone it was analyzed in, whatever
    # the session's zone when it runs (both job entry points set UTC anyway).
    with session_settings(bronze.sparkSession, {SESSION_TIME_ZONE: "UTC"}):
        return bronze.select(
            *[column(name) for name in source_columns],
            op.alias(OP),
            change_time(column(ts_name), is_string).alias(CHANGE_TS),
            sequence.alias(CHANGE_SEQ),
            F.lit(run_id).alias(RUN_ID),
            rank_phase(column(FILE_RANK)).alias(CHANGE_PHASE),
            column(FILE_RANK),
            column(ROW_INDEX),
        )


# Wide enough for any decimal(38, 0) and any bigint: numbers of equal width sort as text like numbers.
_SEQUENCE_WIDTH = 40


def sortable_sequence(sequence: Column, data_type: DataType) -> Column:
    """The change sequence as a string that sorts in the sequence's own order.

    Silver stores it as text (DMS's ``AR_H_CHANGE_SEQ`` is a fixed-width string), but a sequence
    column of a numeric type must not sort as text ("10" < "9"): its digits are left-padded with
    zeros to one width. A negative number keeps its sign unpadded, so the batch check, which wants
    digits, refuses it (no DMS source writes one, and it would not sort).
    """
    if is_whole_number_type(data_type):
        digits = sequence.cast(DecimalType(38, 0)).cast(StringType())
        return F.when(sequence >= 0, F.lpad(digits, _SEQUENCE_WIDTH, "0")).otherwise(digits)
    return sequence.cast(StringType())


def source_schema(changes: DataFrame) -> StructType:
    """The source columns of a batch: everything but icetide's metadata and working columns."""
    return StructType([field for field in changes.schema.fields if not is_metadata_column(field.name)])


def _latest_first(keys: Sequence[str]) -> WindowSpec:
    """A key's changes, latest first (icetide_glue.decision.LATEST_CHANGE_ORDER, nulls lowest)."""
    return Window.partitionBy(*[column(key) for key in keys]).orderBy(
        *[F.col(name).desc_nulls_last() for name in LATEST_CHANGE_ORDER]
    )


def whole_key_window(keys: Sequence[str]) -> WindowSpec:
    """All of a key's changes, latest first: the frame of an aggregate over each key's changes
    that shares the deduplication's one sort."""
    return _latest_first(keys).rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)


def latest_change_per_key(changes: DataFrame, keys: Sequence[str]) -> DataFrame:
    """One change per key: the latest by (phase, change time, change sequence, file, position)."""
    return (
        changes.withColumn(_LATEST, F.row_number().over(_latest_first(keys)))
        .where(F.col(_LATEST) == 1)
        .drop(_LATEST)
    )


def value_columns(columns: Sequence[str], keys: Sequence[str]) -> list[str]:
    """The source columns that are not keys: what a row's image holds."""
    wanted = {key.lower() for key in keys}
    return [c for c in columns if c.lower() not in wanted and not is_metadata_column(c)]


def keep_latest_image(changes: DataFrame, keys: Sequence[str]) -> DataFrame:
    """Mark which changes carry the row's values, and give a keys-only D the latest values known.

    A D row whose non-key columns are all null (PostgreSQL's default replica identity sends only
    the key) carries no values; a soft delete must still keep the row's last known values, never
    nulls. So such a D takes the values of the key's latest change in this batch that has values
    (an I or U before it), with that change's time, sequence and phase in ``_icetide_image_ts`` /
    ``_icetide_image_seq`` / ``_icetide_image_phase``; the classification keeps them only if they
    are newer than silver's row (otherwise silver's values are the latest known). Every other
    change carries its own values (``_icetide_image_ts`` = its own change time);
    ``_icetide_has_image`` says whether there are any. Run before :func:`latest_change_per_key`:
    both use one window.
    """
    values = value_columns(changes.columns, keys)
    has_own = F.lit(True)
    if values:
        has_own = (
            F.greatest(*[column(c).isNotNull() for c in values])
            if len(values) > 1
            else column(values[0]).isNotNull()
        )
    image = F.struct(
        *[column(c).alias(f"v{i}") for i, c in enumerate(values)],
        F.col(CHANGE_TS).alias("ts"),
        F.col(CHANGE_SEQ).alias("seq"),
        F.col(CHANGE_PHASE).alias("phase"),
    )
    latest_image = F.first(F.when(has_own, image), ignorenulls=True).over(whole_key_window(keys))
    with_image = changes.withColumn(_IMAGE, F.when((F.col(OP) == DELETE) & ~has_own, latest_image))
    borrowed = F.col(_IMAGE).isNotNull()
    replaced = {
        c: F.when(borrowed, F.col(f"{_IMAGE}.v{i}")).otherwise(column(c)) for i, c in enumerate(values)
    }
    own_or_borrowed = [replaced[c].alias(c) if c in replaced else column(c) for c in changes.columns]
    return with_image.select(
        *own_or_borrowed,
        (has_own | borrowed).alias(HAS_IMAGE),
        F.when(borrowed, F.col(f"{_IMAGE}.ts")).when(has_own, F.col(CHANGE_TS)).alias(IMAGE_TS),
        F.when(borrowed, F.col(f"{_IMAGE}.seq")).when(has_own, F.col(CHANGE_SEQ)).alias(IMAGE_SEQ),
        F.when(borrowed, F.col(f"{_IMAGE}.phase")).when(has_own, F.col(CHANGE_PHASE)).alias(IMAGE_PHASE),
    )


def empty_changes(spark: SparkSession, silver: StructType) -> DataFrame:
    """A batch without rows, shaped like :func:`normalize_changes`' output for ``silver``'s source
    columns: what a reconcile run without bronze files merges (its reconcile deletes only)."""
    working = [
        StructField(OP, StringType()),
        StructField(CHANGE_TS, TimestampType()),
        StructField(CHANGE_SEQ, StringType()),
        StructField(RUN_ID, StringType()),
        StructField(CHANGE_PHASE, IntegerType()),
        StructField(FILE_RANK, StringType()),
        StructField(ROW_INDEX, LongType()),
    ]
    source = [field for field in silver.fields if not is_metadata_column(field.name)]
    return spark.createDataFrame([], StructType([*source, *working]))


def align_to_silver(changes: DataFrame, silver: StructType, keep_op: bool = True) -> DataFrame:
    """Shape a batch like the silver table: its columns, names and types, in its order.

    A silver column the source no longer has becomes null; narrower source types (smallint into
    int, a smaller decimal) are cast up. With ``keep_op`` the Op column (and the image columns of
    :func:`keep_latest_image`, when present) are kept, for the classification and the commit.
    """
    selected = []
    for field in silver.fields:
        name = find_column(changes.columns, field.name)
        value = column(name) if name is not None else F.lit(None)
        selected.append(value.cast(field.dataType).alias(field.name))
    if keep_op:
        selected += [
            F.col(name)
            for name in _CHANGE_WORKING_COLUMNS
            if name in changes.columns and find_column(silver.fieldNames(), name) is None
        ]
    return changes.select(*selected)


def mark_deletes(aligned: DataFrame, soft_delete: bool) -> DataFrame:
    """For soft deletes, add ``_icetide_deleted_at`` = a delete's change time (null for I and U,
    which revives a deleted row)."""
    if not soft_delete:
        return aligned
    deleted_at = F.when(F.col(OP) == DELETE, F.col(CHANGE_TS)).cast(TimestampType())
    return aligned.withColumn(DELETED_AT, deleted_at)
