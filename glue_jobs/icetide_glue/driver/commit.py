"""The writes of a run merged on the driver (icetide_glue.driver.merge): the appended rows as one
Parquet data file, the removed rows' positions as one position delete file per data file (with
the positions of the delete files they replace, as icetide_glue.merge.position_deletes decides), both
registered with Iceberg's Java API and committed as one ``RowDelta`` (or an append), the same
commit the Spark path makes.

pyarrow writes the files with each column's Iceberg field id and the table's codec; Iceberg's
``ParquetUtil`` reads each written footer back for the metrics Iceberg keeps (column bounds, so
later plans skip the file). The removal's checks (every position written, the commit validated
against the run's snapshot) are the Spark path's own (``commit_row_delta``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from icetide_glue.driver.files import file_size, open_input, open_output
from icetide_glue.driver.silver import FIELD_ID_KEY
from icetide_glue.iceberg_tables import jvm
from icetide_glue.merge.position_deletes import (
    DELETE_FILE_PATH_ID,
    DELETE_FILE_POS_ID,
    SPARK_APP_ID_PROPERTY,
    LiveDeleteFile,
    PositionDeleteFile,
    commit_row_delta,
)
from icetide_glue.table_sql import MAIN_BRANCH

# Iceberg's table properties for the Parquet codec and row-group size, and their defaults.
COMPRESSION_PROPERTY = "write.parquet.compression-codec"
DEFAULT_COMPRESSION = "zstd"
ROW_GROUP_BYTES_PROPERTY = "write.parquet.row-group-size-bytes"
DEFAULT_ROW_GROUP_BYTES = 128 * 1024 * 1024
# Iceberg's codec names that pyarrow spells otherwise.
PYARROW_CODECS = {"uncompressed": "none"}
DELETE_FILE_SCHEMA = pa.schema(
    [
        pa.field(
            "file_path",
            pa.string(),
            nullable=False,
            metadata={FIELD_ID_KEY: str(DELETE_FILE_PATH_ID).encode()},
        ),
        pa.field(
            "pos", pa.int64(), nullable=False, metadata={FIELD_ID_KEY: str(DELETE_FILE_POS_ID).encode()}
        ),
    ]
)


def parquet_codec(iceberg: Any) -> str:
    """The table's Parquet codec (zstd unless it says otherwise), as pyarrow names it."""
    codec = str(iceberg.properties().getOrDefault(COMPRESSION_PROPERTY, DEFAULT_COMPRESSION)).lower()
    return PYARROW_CODECS.get(codec, codec)


def write_data_file(spark: SparkSession, iceberg: Any, rows: pa.Table, schema: pa.Schema) -> Any:
    """``rows`` (already in the table's order) written as one Parquet data file of ``iceberg``
    with ``schema``'s types and field ids (a column ``rows`` lacks, such as the values hash of a
    table that stores none, is null); its Iceberg ``DataFile`` (not committed)."""
    api = jvm(spark).org.apache.iceberg
    path = str(iceberg.locationProvider().newDataLocation(f"icetide-driver-{uuid.uuid4()}.parquet"))
    typed = pa.Table.from_arrays(
        [
            rows.column(field.name).cast(field.type)
            if field.name in rows.column_names
            else pa.nulls(len(rows), field.type)
            for field in schema
        ],
        schema=schema,
    )
    group_bytes = int(
        iceberg.properties().getOrDefault(ROW_GROUP_BYTES_PROPERTY, str(DEFAULT_ROW_GROUP_BYTES))
    )
    row_bytes = max(1, typed.nbytes // max(1, len(typed)))
    with open_output(path) as sink:
        pq.write_table(
            typed,
            sink,
            compression=parquet_codec(iceberg),
            row_group_size=max(1024, group_bytes // row_bytes),
        )
    metrics = api.parquet.ParquetUtil.fileMetrics(
        iceberg.io().newInputFile(path), api.MetricsConfig.forTable(iceberg)
    )
    return (
        api.DataFiles.builder(iceberg.spec())
        .withPath(path)
        .withFormat(api.FileFormat.PARQUET)
        .withFileSizeInBytes(file_size(path))
        .withMetrics(metrics)
        .build()
    )


def append_data_file(
    spark: SparkSession, iceberg: Any, data_file: Any, properties: Mapping[str, str]
) -> None:
    """Commit ``data_file`` to main as one append carrying ``properties``."""
    append = iceberg.newAppend().toBranch(MAIN_BRANCH).appendFile(data_file)
    append = append.set(SPARK_APP_ID_PROPERTY, spark.sparkContext.applicationId)
    for key, value in properties.items():
        append = append.set(key, value)
    append.commit()


def _replaced_positions(replaced: Sequence[LiveDeleteFile], data_file: str) -> list[np.ndarray]:
    found = []
    for old in replaced:
        if old.data_file != data_file:
            continue
        with open_input(old.path) as source:
            found.append(pq.read_table(source, columns=["pos"]).column("pos").to_numpy())
    return found


def write_position_deletes(
    iceberg: Any, positions: Mapping[str, np.ndarray], replaced: Sequence[LiveDeleteFile]
) -> list[PositionDeleteFile]:
    """One position delete file per data file of ``positions`` (the removed rows' positions, by
    data file), holding those and the positions of the ``replaced`` delete files of that data
    file, sorted (Iceberg requires it)."""
    folder = str(iceberg.locationProvider().newDataLocation(f"icetide-position-deletes-{uuid.uuid4()}"))
    written = []
    for index, (data_file, found) in enumerate(sorted(positions.items())):
        ordered = np.sort(np.concatenate([found, *_replaced_positions(replaced, data_file)]))
        table = pa.Table.from_arrays(
            [pa.repeat(pa.scalar(data_file, pa.string()), len(ordered)), pa.array(ordered, pa.int64())],
            schema=DELETE_FILE_SCHEMA,
        )
        path = f"{folder}/data_file_index={index}/positions.parquet"
        with open_output(path) as sink:
            pq.write_table(table, sink, compression=parquet_codec(iceberg))
        written.append(PositionDeleteFile(path, file_size(path), data_file))
    return written


__all__ = [
    "append_data_file",
    "commit_row_delta",
    "parquet_codec",
    "write_data_file",
    "write_position_deletes",
]
