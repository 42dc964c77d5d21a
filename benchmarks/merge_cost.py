"""What does one run cost against the size of the table it lands in? icetide beside the alternatives.

An hourly delta should cost what changed, not what the table holds. This benchmark measures that
claim in ONE Spark process (``local[2]``), side by side, at several table sizes (default 2M and 20M
rows; ``--scale F`` multiplies every size and change count for a quick run):

  icetide  ``icetide_glue.job.run_job`` on the batch's DMS folder, into a silver table that the job
           itself built from a DMS full load (the build is timed and printed too)
  append   a plain Iceberg append of the batch's rows (nothing is read from the table)
  naive    the blogs' merge: read the batch, keep each key's latest change (row_number), one MERGE
           INTO an unpartitioned copy-on-write Iceberg table (format v2) that started as a copy
           of silver's source columns
  reload   a full reload: CREATE OR REPLACE the table from a full export of the source as it is
           after the batch (the export is written untimed, before the round)
  bare     the naive merge's SQL on silver's layout with one key range: a merge-on-read table (a
           copy of silver's source columns, sorted by key, silver's file and row-group sizes),
           its MERGE limited to the batch's lowest to highest key, so Iceberg skips the files
           outside them. No classification or counts, no order guard, no tombstones, no run
           bookkeeping. Not a candidate and not a lower bound (it keeps the NOT MATCHED clause,
           whose outer join shuffles the scanned rows): a reference for what one plain Spark
           MERGE of the batch costs here. Its ratios are printed beside the targets for reference
  floor    the reads and writes any merge with icetide's answers needs, each in its plainest Spark
           form, back to back, and nothing more (``run_floor``): keep each key's latest change
           (kept), read silver's rows of the batch's keys where they can be (lowest to highest key:
           key, change time and sequence, value columns, data file and position: what finding the
           row a change replaces, the order guard and the unchanged check read) joined to it
           (kept), append the rows the changes leave to a table of silver's source columns, write
           the found rows' positions as parquet (not committed). No checks, counts, tombstones,
           delete-file bookkeeping or run records, and silver is left as it is: not a candidate,
           a measured floor for a run of Spark jobs on this machine. Its ratios are printed too
  arrow    the floor's reads and writes in the driver's own process, without a Spark job
           (benchmarks/one_process_floor.py: pyarrow reads and writes the files, Iceberg's Java
           API plans silver's files and commits the append): what leaving Spark's jobs out for a
           small batch could buy, measured before any such engine is built. Checked after each
           round to find the floor's positions and append the floor's rows (read back by Spark,
           compared by count and checksum); Iceberg's scan figures are not
           counted for it (no Spark scan reports them). A reference, its ratios printed too

Every round applies the SAME batch to all seven, in an order rotated each round (so no approach
always runs first, on a cold cache), after an untimed warm-up pass of everything at 1,000 rows.
Batches are DMS CDC folders (``Op``, the ``dms_timestamp`` string, the source columns ``id``,
``name``, ``amount``, ``updated_at``), one change per key, every change later than everything
before, generated deterministically from a seed per pattern and round: 70 % updates and 10 %
deletes of live keys, 20 % inserts of new keys above the largest id. Source ids grow with time
(``updated_at`` of the full load rises with ``id``; inserted keys are above every earlier one), so
"the newest keys" are the highest live ids. The patterns:

  scattered  changes = 1 % of the table; updated and deleted keys drawn uniformly from all live keys
  recent     changes = 1 % of the table, skewed to recent rows as a timestamp-driven delta is:
             90 % of the updated/deleted keys are drawn from the newest 1 % of the live keys, the
             other 10 % from the next-newest 4 % (ranks 1 %-5 % from the top); inserts as always
  fixed      the recent pattern with a fixed number of changes (20,000 times --scale) at every
             table size, so only the table grows

Per size the tables are built once and the patterns run one after another on them (scattered,
recent, fixed), so later patterns see the files and delete files earlier rounds left, as an
hourly schedule would. Live keys are tracked through the naive table, which holds the source's
state; after every round icetide's silver (source columns, live rows), the reload and the bare
tables are compared with it (row count and an order-independent checksum, differing rows printed). A
difference keeps the benchmark measuring but makes it exit 1 at the end; a missed speed target
is printed, never an exit code.

Per approach and round: wall time; bytes read (Spark's stage input bytes: bronze, exports, every
read of the table, and re-reads of data a run cached, which Spark counts as input too); files and
bytes Iceberg scanned (its scan metrics, which Spark keeps as custom SQL metrics of each BatchScan
node, read from the SQL status store; for the reads icetide's job plans itself, which report none
to Spark, the planning figures the job logs: icetide_glue.merge.planned_scan); bytes and files written
(summed from the summaries of every snapshot the approach committed, icetide's tombstone table
included). Times on a shared
2-core machine are noisy, so ratios use the minimum over rounds; bytes and files are not noisy.
Five rounds by default: at 20M rows the first pattern's times can still be falling at its third
round for icetide, the naive MERGE and the reload (a warm-up at that size, of the JVM or the file
cache, not told apart), so three rounds may not have settled there.
Run (``make bench`` runs the defaults; the targets are set for 20M rows):

    .venv/bin/python benchmarks/merge_cost.py [--scale 0.01] [--rounds 5] [--out docs/benchmarks]
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import logging
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import one_process_floor
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from icetide_glue.arguments import JobArguments
from icetide_glue.iceberg_tables import iceberg_table
from icetide_glue.job import run_job
from icetide_glue.merge import planned_scan
from icetide_glue.silver import MERGE_TABLE_PROPERTIES
from icetide_glue.table_sql import write_ordered_by_sql
from icetide_local.spark import local_spark_session, runtime_versions, spark_running

CATALOG = "bench"
DATABASE = "merge_cost"
KEY = "id"
# The source table's columns, as silver, the naive table and the exports hold them.
SOURCE_COLUMNS = (
    ("id", "bigint"),
    ("name", "string"),
    ("amount", "decimal(18,2)"),
    ("updated_at", "timestamp"),
)
SOURCE_NAMES = tuple(name for name, _ in SOURCE_COLUMNS)
TIMESTAMP_COLUMN = "dms_timestamp"
DMS_TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f"
# The full load's updated_at is BASE_TIME + id seconds; it was loaded an hour after its newest row.
BASE_TIME = datetime(2026, 1, 1, tzinfo=UTC)
DEFAULT_SIZES = (2_000_000, 20_000_000)
DEFAULT_FIXED_CHANGES = 20_000
CHANGE_SHARE_OF_TABLE = 0.01
UPDATE_SHARE, DELETE_SHARE = 0.7, 0.1  # the rest (20 %) are inserts
# Rows per full-load file (DMS splits a full load into LOADnnnnnnnn files).
ROWS_PER_LOAD_FILE = 1_000_000
APPROACHES = ("icetide", "append", "naive", "reload", "bare", "floor", "arrow")
# The approaches whose tables hold the source's state after each round, compared with the naive one.
CHECKED_APPROACHES = {"icetide": "silver", "reload": "reload", "bare": "bare"}
COPY_ON_WRITE_V2 = {
    "format-version": "2",
    "write.delete.mode": "copy-on-write",
    "write.update.mode": "copy-on-write",
    "write.merge.mode": "copy-on-write",
}
# Iceberg's scan metrics (org.apache.iceberg.spark.source.metrics.*), summed over a run's scans.
SCAN_METRICS = {
    "ResultDataFiles": "scanned_data_files",
    "TotalDataFileSize": "scanned_data_bytes",
    "SkippedDataFiles": "skipped_data_files",
    "ResultDeleteFiles": "scanned_delete_files",
    "TotalDeleteFileSize": "scanned_delete_bytes",
}
# Snapshot summary fields summed over the snapshots an approach committed.
WRITE_SUMMARY_FIELDS = {
    "added-files-size": "written_bytes",
    "added-data-files": "written_data_files",
    "added-delete-files": "written_delete_files",
    "added-position-deletes": "written_position_deletes",
    "added-records": "written_records",
}
MISMATCH_EXAMPLES = 5
# The untimed first pass: every approach and pattern once, so the first measured size does not pay
# for the JVM's class loading and compilation (and the fixed pattern's size ratio stays fair).
WARM_UP_SIZE = 1_000
WARM_UP_CHANGES = 10


@dataclass(frozen=True)
class Band:
    """A slice of the live keys by age: from the newest ``start`` to the newest ``end`` fraction,
    and the share of a batch's updated and deleted keys drawn from it."""

    start: float
    end: float
    share: float


@dataclass(frozen=True)
class Pattern:
    name: str
    bands: tuple[Band, ...]
    fixed: bool  # a fixed number of changes at every size, rather than a share of the table


RECENT_BANDS = (Band(0.0, 0.01, 0.9), Band(0.01, 0.05, 0.1))
PATTERNS = (
    Pattern("scattered", (Band(0.0, 1.0, 1.0),), fixed=False),
    Pattern("recent", RECENT_BANDS, fixed=False),
    Pattern("fixed", RECENT_BANDS, fixed=True),
)
PATTERN_NAMES = tuple(pattern.name for pattern in PATTERNS)


@dataclass(frozen=True)
class RatioTarget:
    """A speed target: ``numerator``'s time over ``denominator``'s (minimum over rounds)."""

    pattern: str
    numerator: str
    denominator: str
    bound: float
    at_least: bool

    @property
    def label(self) -> str:
        return f"{self.numerator}/{self.denominator}"

    def about(self, subject: str) -> RatioTarget:
        """The same target with ``subject`` in icetide's place."""
        swap = {"icetide": subject}
        return replace(
            self,
            numerator=swap.get(self.numerator, self.numerator),
            denominator=swap.get(self.denominator, self.denominator),
        )

    def passes(self, value: float) -> bool:
        return value >= self.bound if self.at_least else value <= self.bound


TARGET_ROWS = 20_000_000  # the size the targets are set for
RATIO_TARGETS = (
    RatioTarget("scattered", "naive", "icetide", 3.0, at_least=True),
    RatioTarget("scattered", "reload", "icetide", 1.5, at_least=True),
    RatioTarget("recent", "reload", "icetide", 10.0, at_least=True),
    RatioTarget("recent", "icetide", "append", 3.0, at_least=False),
)
# fixed: icetide's time at the largest size over its time at the smallest, at most this.
FIXED_GROWTH_TARGET = 1.5


@dataclass(frozen=True)
class Config:
    sizes: tuple[int, ...]
    rounds: int
    patterns: tuple[Pattern, ...]
    fixed_changes: int
    catalog: str = CATALOG
    database: str = DATABASE

    def changes(self, pattern: Pattern, size: int) -> int:
        return self.fixed_changes if pattern.fixed else round(size * CHANGE_SHARE_OF_TABLE)


@dataclass(frozen=True)
class Tables:
    """The tables of one size, named by their role: silver (icetide's), append, naive, reload, bare,
    floor (the rows the floor's runs append)."""

    catalog: str
    database: str
    size: int

    def name(self, role: str) -> str:
        return f"{self.catalog}.{self.database}.{role}_{self.size}"

    @property
    def silver_target(self) -> str:
        """silver as the job's --target_table (database.table; the catalog is its own argument)."""
        return f"{self.database}.silver_{self.size}"


@dataclass(frozen=True)
class Mix:
    updates: int
    deletes: int
    inserts: int

    @classmethod
    def of(cls, changes: int) -> Mix:
        deletes = round(changes * DELETE_SHARE)
        updates = round(changes * UPDATE_SHARE)
        return cls(updates, deletes, changes - updates - deletes)

    @property
    def total(self) -> int:
        return self.updates + self.deletes + self.inserts

    @property
    def existing(self) -> int:
        """Changes to keys that already exist (updates and deletes)."""
        return self.updates + self.deletes


@dataclass(frozen=True)
class Batch:
    """One round's change batch, written to bronze, and the source's full export after it."""

    pattern: str
    round: int
    seed: int
    mix: Mix
    folder: Path  # the run's bronze folder (the job's --bronze_uri)
    files: Path  # the folder holding its parquet file
    export: Path
    changed_at: datetime
    # Silver's snapshot before the round: the floor reads silver as the round found it, whichever
    # approach ran first (icetide's run of the same batch changes silver).
    silver_snapshot: int

    @property
    def run_id(self) -> str:
        return f"{self.pattern}-round-{self.round}"


@dataclass
class SourceState:
    """What the source holds between rounds, as far as generating the next batch needs it."""

    live_keys: int
    next_id: int
    batches: int = 0

    def after(self, mix: Mix) -> None:
        self.live_keys += mix.inserts - mix.deletes
        self.next_id += mix.inserts
        self.batches += 1


@dataclass(frozen=True)
class Check:
    """Two tables compared by row count and an order-independent checksum."""

    what: str
    left_rows: int
    right_rows: int
    left_checksum: str
    right_checksum: str

    @property
    def ok(self) -> bool:
        return (self.left_rows, self.left_checksum) == (self.right_rows, self.right_checksum)


@dataclass
class Results:
    config: Config
    builds: list[dict[str, Any]] = field(default_factory=list)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)

    @property
    def correct(self) -> bool:
        return all(check.ok for check in self.checks)


Progress = Callable[[str], None]
BeforeCompare = Callable[[SparkSession, Tables], None]
# size -> pattern -> approach -> figure name -> value (min/median over rounds)
Summary = dict[int, dict[str, dict[str, dict[str, float]]]]


def progress_to_stderr(message: str) -> None:
    print(f"[merge_cost {datetime.now():%H:%M:%S}] {message}", file=sys.stderr, flush=True)


# --- reading what Spark and Iceberg recorded ------------------------------------------------------


class StatusProbe:
    """What Spark recorded between :meth:`start` and :meth:`finish`: stage input bytes and Iceberg's
    scan metrics of every SQL execution in between. Both come from Spark's status stores (no UI
    needed); PySpark has no API for either, hence the JVM calls."""

    _PLAN_METRIC = re.compile(
        r"^SQLPlanMetric\(.*,(?P<id>\d+),v2Custom_org\.apache\.iceberg\.spark\.source\.metrics\.(?P<kind>\w+)\)$"
    )

    def __init__(self, spark: SparkSession) -> None:
        self._context = spark.sparkContext._jsc.sc()
        self._gateway = spark.sparkContext._gateway
        self._sql_store = spark._jsparkSession.sharedState().statusStore()
        self._last_stage = -1
        self._last_execution = -1

    def start(self) -> StatusProbe:
        self._context.listenerBus().waitUntilEmpty()
        self._last_stage = max((stage.stageId() for stage in self._stages()), default=-1)
        executions = self._sql_store.executionsList()
        self._last_execution = executions.last().executionId() if executions.nonEmpty() else -1
        return self

    def finish(self) -> dict[str, int]:
        """Input bytes and scan metrics since :meth:`start`."""
        self._context.listenerBus().waitUntilEmpty()
        # Stages since the start, by id: a sum over all stages would shrink when Spark forgets old
        # ones (it keeps spark.ui.retainedStages, 1000).
        figures = {
            "input_bytes": sum(
                stage.inputBytes() for stage in self._stages() if stage.stageId() > self._last_stage
            )
        }
        figures.update(self._scan_metrics())
        return figures

    def _stages(self) -> Iterable[Any]:
        no_quantiles = self._gateway.new_array(self._gateway.jvm.double, 0)  # type: ignore[union-attr]
        # stageList(statuses, details, withSummaries, unsortedQuantiles, taskStatus): all stages.
        stages = self._context.statusStore().stageList(None, False, False, no_quantiles, None).iterator()
        while stages.hasNext():
            yield stages.next()

    def _new_executions(self) -> Iterable[Any]:
        newest_first = self._sql_store.executionsList().reverseIterator()
        while newest_first.hasNext():
            execution = newest_first.next()
            if execution.executionId() <= self._last_execution:
                return
            yield execution

    def _scan_metrics(self) -> dict[str, int]:
        # Adaptive execution lists a plan's metrics again with each re-plan; an accumulator is one
        # metric however often it is listed.
        kinds: dict[int, str] = {}
        values: dict[int, str] = {}
        for execution in self._new_executions():
            for line in execution.metrics().mkString("\n").split("\n"):
                found = self._PLAN_METRIC.match(line)
                if found and found["kind"] in SCAN_METRICS:
                    kinds[int(found["id"])] = found["kind"]
            # executionMetrics: accumulator id -> its value as the UI prints it ("12 -> 345").
            for line in self._sql_store.executionMetrics(execution.executionId()).mkString("\n").split("\n"):
                key, _, value = line.partition(" -> ")
                if key.isdigit():
                    values[int(key)] = value
        totals = dict.fromkeys(SCAN_METRICS.values(), 0)
        for accumulator, kind in kinds.items():
            text = values.get(accumulator, "0").replace(",", "")
            totals[SCAN_METRICS[kind]] += int(text) if text.isdigit() else 0
        return totals


def existing_tables(spark: SparkSession, catalog: str, database: str) -> set[str]:
    return {
        f"{catalog}.{database}.{row['tableName']}"
        for row in spark.sql(f"SHOW TABLES IN {catalog}.{database}").collect()
    }


def current_snapshot_id(spark: SparkSession, table: str) -> int:
    """``table``'s current snapshot (main's head) by its metadata, without a Spark job."""
    return int(iceberg_table(spark, table, refreshed=True).currentSnapshot().snapshotId())


def snapshot_summaries(spark: SparkSession, table: str) -> dict[int, dict[str, str]]:
    """Every snapshot's summary, from the table's metadata through Iceberg's Java API: a query of
    ``table.snapshots`` would cost a Spark job per look, two looks per approach and round."""
    summaries = {}
    snapshots = iceberg_table(spark, table, refreshed=True).snapshots().iterator()
    while snapshots.hasNext():
        snapshot = snapshots.next()
        summaries[int(snapshot.snapshotId())] = dict(snapshot.summary())
    return summaries


def written_figures(
    spark: SparkSession, tables: Iterable[str], before: dict[str, set[int]]
) -> dict[str, int]:
    """Sum of the write fields of every snapshot committed since ``before`` (a table missing from it
    was created since)."""
    totals = dict.fromkeys(WRITE_SUMMARY_FIELDS.values(), 0)
    for table in tables:
        for snapshot_id, summary in snapshot_summaries(spark, table).items():
            if snapshot_id in before.get(table, set()):
                continue
            for name, figure in WRITE_SUMMARY_FIELDS.items():
                totals[figure] += int(summary.get(name, 0))
    return totals


class PlannedScans(logging.Handler):
    """Iceberg's scan figures of the reads the job planned itself (icetide_glue.merge.planned_scan logs
    them: a read of staged tasks reports no scan metrics to Spark), summed while attached."""

    _FIGURES: ClassVar[dict[str, str]] = {
        "data_files": "scanned_data_files",
        "data_bytes": "scanned_data_bytes",
        "skipped_data_files": "skipped_data_files",
        "delete_files": "scanned_delete_files",
        "delete_bytes": "scanned_delete_bytes",
    }

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.figures = dict.fromkeys(self._FIGURES.values(), 0)

    def emit(self, record: logging.LogRecord) -> None:
        scan = getattr(record, "scan", None)
        if isinstance(scan, dict):
            for field, figure in self._FIGURES.items():
                self.figures[figure] += int(scan[field])

    @contextmanager
    def attached(self) -> Iterator[PlannedScans]:
        """Receive the planner's INFO records (its level restored after), not passing them on to
        the root logger's handlers."""
        planner = logging.getLogger(planned_scan.__name__)
        level, propagate = planner.level, planner.propagate
        planner.setLevel(logging.INFO)
        planner.propagate = False
        planner.addHandler(self)
        try:
            yield self
        finally:
            planner.removeHandler(self)
            planner.setLevel(level)
            planner.propagate = propagate


def measure(
    spark: SparkSession, written_tables: Callable[[], list[str]], action: Callable[[], None]
) -> dict[str, Any]:
    """Time ``action`` and collect what it read and wrote; only ``action`` runs inside the timer."""
    before = {table: set(snapshot_summaries(spark, table)) for table in written_tables()}
    probe = StatusProbe(spark).start()
    with PlannedScans().attached() as planned:
        started = time.perf_counter()
        action()
        seconds = time.perf_counter() - started
    figures: dict[str, Any] = {"seconds": seconds, **probe.finish()}
    for figure, value in planned.figures.items():
        figures[figure] += value
    figures.update(written_figures(spark, written_tables(), before))
    return figures


# --- generating DMS files --------------------------------------------------------------------------


def dms_time(moment: datetime) -> str:
    return moment.strftime(DMS_TIME_FORMAT)


def write_dms_folder(frame: DataFrame, folder: Path, file_name: Callable[[int], str]) -> None:
    """Write ``frame`` as parquet into ``folder`` under DMS's file names (Spark picks its own names,
    so the files are written beside and moved in)."""
    staging = folder.with_name(folder.name + ".staging")
    frame.write.mode("overwrite").parquet(str(staging))
    folder.mkdir(parents=True)
    for number, part in enumerate(sorted(staging.glob("part-*.parquet")), start=1):
        part.rename(folder / file_name(number))
    shutil.rmtree(staging)


def load_time(size: int) -> datetime:
    """When the full load of a table of ``size`` rows ran: an hour after its newest row."""
    return BASE_TIME + timedelta(seconds=size, hours=1)


def full_load_rows(spark: SparkSession, size: int) -> DataFrame:
    """The source table as DMS's full load writes it (no Op column; the load time as timestamp)."""
    files = max(1, size // ROWS_PER_LOAD_FILE)
    ids = F.col(KEY)
    return spark.range(0, size, 1, numPartitions=files).select(
        F.lit(dms_time(load_time(size))).alias(TIMESTAMP_COLUMN),
        ids.alias("id"),
        F.concat(F.lit("name-"), ids.cast("string")).alias("name"),
        amount_for(ids, 0),
        F.timestamp_seconds(F.lit(int(BASE_TIME.timestamp())) + ids).alias("updated_at"),
    )


def amount_for(ids: Column, seed: int) -> Column:
    return (
        (F.pmod(F.xxhash64(ids, F.lit(seed)), F.lit(10_000_000)) / 100).cast("decimal(18,2)").alias("amount")
    )


def write_full_load(spark: SparkSession, bronze: Path, size: int) -> Path:
    """The DMS full-load folder of the source (bucket/folder/schema/table/LOADnnnnnnnn.parquet)."""
    folder = bronze / f"full-load-{size}"
    # DMS numbers full-load files in hexadecimal, from 1.
    write_dms_folder(
        full_load_rows(spark, size), folder / "bench" / "source_table", lambda n: f"LOAD{n:08X}.parquet"
    )
    return folder


# Ids per block of LiveKeys's count: about 2,000 blocks at 20M ids, one block's ids collected.
BOUNDARY_BLOCK_IDS = 10_000


@dataclass
class LiveKeys:
    """A batch's live keys (``frame``, one column of ids) and how many there are.

    The bands' edges are found from live ids counted per block of :data:`BOUNDARY_BLOCK_IDS`,
    counted once per batch (a pass over the key column) however many edges its bands have.
    """

    frame: DataFrame
    count: int

    @functools.cached_property
    def blocks(self) -> list[tuple[int, int]]:
        """(block, live ids in it), the newest block first."""
        counted = self.frame.groupBy(self.block.alias("block")).count().orderBy(F.desc("block"))
        return [(row["block"], row["count"]) for row in counted.collect()]

    @property
    def block(self) -> Column:
        return F.floor(F.col(KEY) / BOUNDARY_BLOCK_IDS)

    def newest_boundary(self, newest: int) -> int | None:
        """The smallest id among the ``newest`` highest live ids; None when that is no bound at all.

        The block counts, then the ids of the one block the boundary falls in: almost nothing
        held. A top-k (``orderBy().offset(newest - 1).limit(1)``) sends each task's ``newest``
        highest ids to the driver: a million per task for the 5 % band at 20M rows, which filled a
        scratch profile's 1 GB driver.
        """
        if newest <= 0 or newest >= self.count:
            return None
        newer = 0
        for block, count in self.blocks:
            if newer + count >= newest:
                in_block = self.frame.where(self.block == block).select(KEY).collect()
                return int(sorted((r[KEY] for r in in_block), reverse=True)[newest - newer - 1])
            newer += count
        raise RuntimeError(f"{self.count:,} live keys expected, fewer than {newest:,} counted")


def band_keys(live: LiveKeys, band: Band) -> DataFrame:
    """The live keys of ``band`` (its newest ``start`` excluded, up to its newest ``end``)."""
    keys = live.frame
    upper = live.newest_boundary(int(band.start * live.count))
    lower = live.newest_boundary(int(band.end * live.count))
    if upper is not None:
        keys = keys.where(F.col(KEY) < upper)
    if lower is not None:
        keys = keys.where(F.col(KEY) >= lower)
    return keys


def shares(total: int, bands: Sequence[Band]) -> list[int]:
    """``total`` split over the bands by their shares (the last band takes the rounding)."""
    counts = [round(total * band.share) for band in bands[:-1]]
    return [*counts, total - sum(counts)]


def chosen_keys(live: LiveKeys, pattern: Pattern, mix: Mix, seed: int) -> DataFrame:
    """(id, Op) of the batch's updated and deleted keys: a seeded random sample of each band."""
    picked = []
    for band, changed, deleted in zip(
        pattern.bands, shares(mix.existing, pattern.bands), shares(mix.deletes, pattern.bands), strict=True
    ):
        order = F.xxhash64(F.col(KEY), F.lit(seed))
        sample = band_keys(live, band).orderBy(order).limit(changed)
        # A sample of at most a batch's keys: one window partition is fine.
        rank = F.row_number().over(Window.orderBy(order))
        picked.append(sample.select(KEY, F.when(rank <= deleted, "D").otherwise("U").alias("Op")))
    chosen = picked[0]
    for more in picked[1:]:
        chosen = chosen.unionByName(more)
    return chosen


def change_rows(
    spark: SparkSession, source: DataFrame, chosen: DataFrame, mix: Mix, first_new_id: int, batch: Batch
) -> DataFrame:
    """The batch as DMS CDC rows: Op, the change time string, the row after the change (a delete
    carries the row as it was, DMS's before-image)."""
    stamp = F.lit(dms_time(batch.changed_at))
    changed_at = F.lit(batch.changed_at).cast("timestamp")
    new_name = F.concat(F.lit(f"{batch.run_id} "), F.col(KEY).cast("string"))
    is_delete = F.col("Op") == "D"
    existing = chosen.join(source, KEY).select(
        "Op",
        stamp.alias(TIMESTAMP_COLUMN),
        KEY,
        F.when(is_delete, F.col("name")).otherwise(new_name).alias("name"),
        F.when(is_delete, F.col("amount")).otherwise(amount_for(F.col(KEY), batch.seed)).alias("amount"),
        F.when(is_delete, F.col("updated_at")).otherwise(changed_at).alias("updated_at"),
    )
    inserted = spark.range(first_new_id, first_new_id + mix.inserts).select(
        F.lit("I").alias("Op"),
        stamp.alias(TIMESTAMP_COLUMN),
        KEY,
        new_name.alias("name"),
        amount_for(F.col(KEY), batch.seed),
        changed_at.alias("updated_at"),
    )
    return existing.unionByName(inserted)


def prepare_batch(
    spark: SparkSession,
    tables: Tables,
    bronze: Path,
    pattern: Pattern,
    round_number: int,
    changes: int,
    state: SourceState,
) -> Batch:
    """Write the round's CDC folder and the source's full export after it (untimed).

    The naive table holds the source's state (checked against icetide and the reload every round),
    so live keys and the before-images of deletes are read from it.
    """
    mix = Mix.of(changes)
    changed_at = load_time(tables.size) + timedelta(hours=state.batches + 1)
    folder = bronze / f"{tables.size}-{pattern.name}-round-{round_number}"
    batch = Batch(
        pattern=pattern.name,
        round=round_number,
        seed=1000 * (PATTERN_NAMES.index(pattern.name) + 1) + round_number,
        mix=mix,
        folder=folder,
        files=folder / "bench" / "source_table",
        export=bronze / f"{tables.size}-{pattern.name}-round-{round_number}-export",
        changed_at=changed_at,
        silver_snapshot=current_snapshot_id(spark, tables.name("silver")),
    )
    source = spark.table(tables.name("naive"))
    chosen = chosen_keys(LiveKeys(source.select(KEY), state.live_keys), pattern, mix, batch.seed)
    rows = change_rows(spark, source, chosen, mix, state.next_id, batch)
    # DMS names a CDC file by its time, yyyyMMdd-HHmmssSSS.
    cdc_name = changed_at.strftime("%Y%m%d-%H%M%S%f")[:-3] + ".parquet"
    write_dms_folder(rows.repartition(1), batch.files, lambda _: cdc_name)
    written = spark.read.parquet(str(batch.files))
    check_mix(written, mix, batch)
    after = source.join(written.select(KEY), KEY, "left_anti").unionByName(
        written.where(F.col("Op") != "D").select(*SOURCE_NAMES)
    )
    after.write.parquet(str(batch.export))
    return batch


def check_mix(written: DataFrame, mix: Mix, batch: Batch) -> None:
    """The batch holds the changes its mix promises (a band too small to sample from would
    silently shrink it, and the live-key count would drift)."""
    counts = {row["Op"]: row["count"] for row in written.groupBy("Op").count().collect()}
    expected = {"U": mix.updates, "D": mix.deletes, "I": mix.inserts}
    if counts != {op: count for op, count in expected.items() if count}:
        raise RuntimeError(f"{batch.folder}: the batch holds {counts} changes, not {expected}")


# --- the approaches ---------------------------------------------------------------------------------


def job_arguments(
    tables: Tables, run_id: str, bronze: Path, *, full_load_rows: int = 0, changes: int = 0
) -> JobArguments:
    """The job's arguments as the state machine passes them, DMS's counts included: the rows of the
    LOAD files (``--expected_rows``, DMS's FullLoadRows) and the changes of the CDC files
    (``--max_change_rows``, DMS's Inserts + Updates + Deletes), as this benchmark wrote them."""
    return JobArguments.from_options(
        {
            "target_table": tables.silver_target,
            "run_id": run_id,
            "bronze_uri": str(bronze),
            "primary_keys": KEY,
            "load_mode": "merge",
            "watermark_column": "updated_at",
            "timestamp_column": TIMESTAMP_COLUMN,
            "catalog": tables.catalog,
            "expected_rows": str(full_load_rows),
            "max_change_rows": str(changes),
        }
    )


def run_icetide(spark: SparkSession, arguments: JobArguments) -> None:
    manifest = run_job(spark, arguments)
    if manifest.get("snapshotId") is None:
        raise RuntimeError(
            f"icetide committed nothing for {arguments.run_id} into {arguments.target_table}: {manifest}"
        )


def run_append(spark: SparkSession, tables: Tables, batch: Batch) -> None:
    spark.read.parquet(str(batch.files)).writeTo(tables.name("append")).append()


NAIVE_MERGE = """
MERGE INTO {target} t
USING (
  SELECT * FROM (
    SELECT *, row_number() OVER (PARTITION BY id ORDER BY dms_timestamp DESC) AS rn FROM {changes}
  ) WHERE rn = 1
) s
ON t.id = s.id{key_filter}
WHEN MATCHED AND s.Op = 'D' THEN DELETE
WHEN MATCHED THEN UPDATE SET t.name = s.name, t.amount = s.amount, t.updated_at = s.updated_at
WHEN NOT MATCHED AND s.Op <> 'D' THEN INSERT (id, name, amount, updated_at)
  VALUES (s.id, s.name, s.amount, s.updated_at)
"""


def run_naive(spark: SparkSession, tables: Tables, batch: Batch) -> None:
    view = f"naive_changes_{tables.size}"
    spark.read.parquet(str(batch.files)).createOrReplaceTempView(view)
    spark.sql(NAIVE_MERGE.format(target=tables.name("naive"), changes=view, key_filter=""))
    spark.catalog.dropTempView(view)


def key_bounds(changes: DataFrame, batch: Batch) -> tuple[int, int]:
    """The batch's lowest and highest key: the one key range ``bare`` and ``floor`` read."""
    bounds = changes.agg(F.min(KEY), F.max(KEY)).first()
    assert bounds is not None  # an aggregate without grouping has one row
    low, high = bounds
    if low is None:
        raise RuntimeError(f"{batch.folder}: an empty batch")  # every pattern draws at least 10 changes
    return int(low), int(high)


def run_bare(spark: SparkSession, tables: Tables, batch: Batch) -> None:
    """The naive merge into the merge-on-read copy, its target scan limited to the batch's keys."""
    view = f"bare_changes_{tables.size}"
    changes = spark.read.parquet(str(batch.files))
    low, high = key_bounds(changes, batch)
    changes.createOrReplaceTempView(view)
    key_filter = f" AND t.id BETWEEN {low} AND {high}"
    spark.sql(NAIVE_MERGE.format(target=tables.name("bare"), changes=view, key_filter=key_filter))
    spark.catalog.dropTempView(view)


def floor_positions(batch: Batch, approach: str = "floor") -> Path:
    """Where ``approach`` (the floor or arrow) writes the positions of a round's found rows
    (beside the export, never in the bronze folder the job reads; removed with the round's files)."""
    return batch.export.with_name(f"{batch.export.name}-{approach}-positions")


# Silver's columns the floor reads besides the source's: what the order guard compares.
FLOOR_METADATA_COLUMNS = ("_icetide_change_ts", "_icetide_change_seq")


def run_floor(spark: SparkSession, tables: Tables, batch: Batch) -> None:
    """The floor (module docstring): the batch's latest change per key; silver's rows of its keys
    as the round found them (one key range, as ``bare``, the batch broadcast into silver's scan,
    so silver is read once and never shuffled); the rows the changes leave appended; the found
    rows' positions written. :func:`check_floor` checks afterwards, untimed, that it did all that."""
    changes = spark.read.parquet(str(batch.files))
    latest_first = Window.partitionBy(KEY).orderBy(F.col(TIMESTAMP_COLUMN).desc())
    latest = (
        changes.withColumn("rn", F.row_number().over(latest_first)).where(F.col("rn") == 1).drop("rn")
    ).localCheckpoint(eager=True)
    low, high = key_bounds(latest, batch)
    silver = (
        spark.read.option("snapshot-id", str(batch.silver_snapshot))
        .table(tables.name("silver"))
        .where(F.col(KEY).between(low, high))
    )
    found = (
        silver.select(
            F.col(KEY).alias("silver_id"),
            *FLOOR_METADATA_COLUMNS,
            *[F.col(name).alias(f"silver_{name}") for name in SOURCE_NAMES if name != KEY],
            F.col("_file").alias("silver_file"),
            F.col("_pos").alias("silver_pos"),
        )
        .join(F.broadcast(latest), F.col("silver_id") == latest[KEY])
        .localCheckpoint(eager=True)
    )
    latest.where(F.col("Op") != "D").select(*SOURCE_NAMES).writeTo(tables.name("floor")).append()
    positions = found.select(F.col("silver_file").alias("file_path"), F.col("silver_pos").alias("pos"))
    positions.sortWithinPartitions("file_path", "pos").write.parquet(str(floor_positions(batch)))


def check_floor(spark: SparkSession, batch: Batch, cost: dict[str, Any], approach: str = "floor") -> None:
    """After a floor (or arrow) run, untimed: it found every updated or deleted key in silver and
    appended every update and insert (a floor that skipped work would stop the benchmark)."""
    found = spark.read.parquet(str(floor_positions(batch, approach))).count()
    appended = cost["written_records"]
    expected = (batch.mix.existing, batch.mix.updates + batch.mix.inserts)
    if (found, appended) != expected:
        raise RuntimeError(
            f"{approach} of {batch.run_id}: {found} rows found and {appended} appended, not {expected}"
        )


def run_arrow_floor(spark: SparkSession, tables: Tables, batch: Batch) -> None:
    """The floor's reads and writes in this process (benchmarks/one_process_floor.py); stops the
    benchmark when its join did not carry every column the floor reads (found positions alone
    would not tell a read of the keys only)."""
    result = one_process_floor.run(
        spark,
        one_process_floor.FloorRun(
            batch_files=batch.files,
            silver=tables.name("silver"),
            silver_snapshot=batch.silver_snapshot,
            target=tables.name("arrow"),
            positions=floor_positions(batch, "arrow"),
            key=KEY,
            change_time=TIMESTAMP_COLUMN,
            source_names=SOURCE_NAMES,
            silver_columns=FLOOR_METADATA_COLUMNS,
        ),
    )
    missing = {f"silver_{name}" for name in (*SOURCE_NAMES, *FLOOR_METADATA_COLUMNS)} - set(
        result.joined_columns
    )
    if result.found and missing:
        raise RuntimeError(f"arrow of {batch.run_id}: silver's {sorted(missing)} not read")


def check_arrow_floor(spark: SparkSession, tables: Tables, batch: Batch, cost: dict[str, Any]) -> None:
    """After an arrow run, untimed: it found the very positions the Spark floor found (same file,
    same row: the delete files applied alike), and its table holds the rows the floor's does (both
    start empty and take the same rows each round: read back by Spark, so a wrong type or field id
    shows too)."""
    check_floor(spark, batch, cost, "arrow")
    appended = fingerprint(source_rows(spark.table(tables.name("arrow"))))
    if appended != fingerprint(source_rows(spark.table(tables.name("floor")))):
        raise RuntimeError(f"arrow of {batch.run_id}: its table's rows differ from the floor's")
    mine, floors = (
        spark.read.parquet(str(floor_positions(batch, approach))).select("file_path", "pos")
        for approach in ("arrow", "floor")
    )
    differ = mine.exceptAll(floors).count() + floors.exceptAll(mine).count()
    if differ:
        raise RuntimeError(f"arrow of {batch.run_id}: {differ} position(s) differ from the floor's")


def run_reload(spark: SparkSession, tables: Tables, batch: Batch) -> None:
    export = spark.read.parquet(str(batch.export)).select(*SOURCE_NAMES)
    export.writeTo(tables.name("reload")).using("iceberg").tableProperty(
        "format-version", "2"
    ).createOrReplace()


def approach_action(name: str, spark: SparkSession, tables: Tables, batch: Batch) -> Callable[[], None]:
    actions: dict[str, Callable[[], None]] = {
        "icetide": lambda: run_icetide(
            spark, job_arguments(tables, batch.run_id, batch.folder, changes=batch.mix.total)
        ),
        "append": lambda: run_append(spark, tables, batch),
        "naive": lambda: run_naive(spark, tables, batch),
        "reload": lambda: run_reload(spark, tables, batch),
        "bare": lambda: run_bare(spark, tables, batch),
        "floor": lambda: run_floor(spark, tables, batch),
        "arrow": lambda: run_arrow_floor(spark, tables, batch),
    }
    return actions[name]


def measure_approach(spark: SparkSession, tables: Tables, batch: Batch, approach: str) -> dict[str, Any]:
    return measure(
        spark,
        lambda: written_tables(spark, tables, approach),
        approach_action(approach, spark, tables, batch),
    )


def written_tables(spark: SparkSession, tables: Tables, approach: str) -> list[str]:
    """The tables whose new snapshots are ``approach``'s writes: icetide's include the companion
    tables the job keeps beside silver (``silver__icetide_tombstones``)."""
    existing = existing_tables(spark, tables.catalog, tables.database)
    target = tables.name("silver" if approach == "icetide" else approach)
    return sorted(
        t for t in existing if t == target or (approach == "icetide" and t.startswith(target + "__"))
    )


# --- building and comparing -------------------------------------------------------------------------


def create_tables(spark: SparkSession, tables: Tables, full_load: Path) -> None:
    """The naive, bare, append, floor and arrow tables, as untimed copies of the build (silver's
    source columns; the append table's rows with an empty Op; the floor's and arrow's start empty)."""
    copy_of_silver(spark, tables, "naive", COPY_ON_WRITE_V2)
    # Silver's layout: its properties, and rows written (and rewritten) in key order.
    copy_of_silver(spark, tables, "bare", MERGE_TABLE_PROPERTIES, f"ORDER BY {KEY}")
    spark.sql(write_ordered_by_sql(tables.name("bare"), [KEY]))
    bronze = spark.read.parquet(str(full_load / "bench" / "source_table"))
    bronze.select(F.lit(None).cast("string").alias("Op"), TIMESTAMP_COLUMN, *SOURCE_NAMES).writeTo(
        tables.name("append")
    ).using("iceberg").tableProperty("format-version", "2").create()
    copy_of_silver(spark, tables, "floor", MERGE_TABLE_PROPERTIES, "LIMIT 0")
    copy_of_silver(spark, tables, "arrow", MERGE_TABLE_PROPERTIES, "LIMIT 0")


def copy_of_silver(
    spark: SparkSession, tables: Tables, role: str, table_properties: dict[str, str], tail: str = ""
) -> None:
    """``role``'s table: silver's source columns, with ``table_properties``, its rows as ``tail``
    (a clause after the SELECT) says: ``ORDER BY id`` for the bare table, which starts in silver's
    key order as silver does; ``LIMIT 0`` for the floor's, which starts empty (its runs append)."""
    properties = ", ".join(f"'{key}' = '{value}'" for key, value in table_properties.items())
    spark.sql(
        f"CREATE TABLE {tables.name(role)} USING iceberg TBLPROPERTIES ({properties}) "  # noqa: S608
        f"AS SELECT {', '.join(SOURCE_NAMES)} FROM {tables.name('silver')} {tail}"
    )


def source_rows(frame: DataFrame) -> DataFrame:
    """The source columns of the live rows, typed alike on every side of a comparison (a silver
    loaded with soft deletes keeps deleted rows, marked)."""
    if "_icetide_deleted_at" in frame.columns:
        frame = frame.where(F.col("_icetide_deleted_at").isNull())
    return frame.select(*[F.col(name).cast(kind).alias(name) for name, kind in SOURCE_COLUMNS])


def fingerprint(frame: DataFrame) -> tuple[int, str]:
    """Row count and the sum of every row's xxhash64 (as a decimal: a bigint sum would overflow)."""
    row = frame.agg(F.count(F.lit(1)), F.sum(F.xxhash64(*SOURCE_NAMES).cast("decimal(38,0)"))).first()
    assert row is not None  # an aggregate without grouping has one row
    return int(row[0]), str(row[1] if row[1] is not None else Decimal(0))


def compare(
    what: str, left: DataFrame, right: DataFrame, right_print: tuple[int, str] | None = None
) -> Check:
    """Compare two tables' source rows; on a difference print some rows each side lacks.
    ``right_print``: the right side's fingerprint when already known (one reference, two checks)."""
    left, right = source_rows(left), source_rows(right)
    (left_rows, left_sum), (right_rows, right_sum) = fingerprint(left), right_print or fingerprint(right)
    check = Check(what, left_rows, right_rows, left_sum, right_sum)
    if not check.ok:
        sides = what.split(" vs ")
        print(f"MISMATCH {what}: {left_rows} rows (checksum {left_sum}) vs {right_rows} ({right_sum})")
        for name, extra in ((sides[0], left.exceptAll(right)), (sides[-1], right.exceptAll(left))):
            rows = extra.orderBy(KEY).limit(MISMATCH_EXAMPLES).collect()
            print(f"  rows only in {name} (up to {MISMATCH_EXAMPLES}): {[row.asDict() for row in rows]}")
    return check


def build(
    spark: SparkSession, tables: Tables, bronze: Path, progress: Progress
) -> tuple[dict[str, Any], Check]:
    """Silver built by icetide's own job from a DMS full load (timed), then the untimed copies."""
    started = time.perf_counter()
    full_load = write_full_load(spark, bronze, tables.size)
    written_in = time.perf_counter() - started
    progress(f"size {tables.size:,}: full load written in {written_in:.1f} s; building silver with run_job")
    figures = measure(
        spark,
        lambda: written_tables(spark, tables, "icetide"),
        lambda: run_icetide(spark, job_arguments(tables, "full-load", full_load, full_load_rows=tables.size)),
    )
    check = compare(
        "icetide vs full load",
        spark.table(tables.name("silver")),
        spark.read.parquet(str(full_load / "bench" / "source_table")),
    )
    create_tables(spark, tables, full_load)
    shutil.rmtree(full_load)
    return {"size": tables.size, "bronze_write_seconds": written_in, **figures}, check


def drop_tables(spark: SparkSession, tables: Tables) -> None:
    for table in existing_tables(spark, tables.catalog, tables.database):
        if table.endswith(f"_{tables.size}") or f"_{tables.size}__" in table:
            spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")


def run_round(
    spark: SparkSession,
    tables: Tables,
    batch: Batch,
    order: Sequence[str],
    progress: Progress,
    before_compare: BeforeCompare | None,
) -> tuple[dict[str, Any], list[Check]]:
    """Apply one batch with every approach in ``order``, then compare the results."""
    costs = {}
    for name in order:
        progress(f"size {tables.size:,} | {batch.pattern} round {batch.round + 1} | {name}")
        costs[name] = measure_approach(spark, tables, batch, name)
    check_floor(spark, batch, costs["floor"])
    check_arrow_floor(spark, tables, batch, costs["arrow"])
    if before_compare is not None:
        before_compare(spark, tables)
    naive = spark.table(tables.name("naive"))
    reference = fingerprint(source_rows(naive))
    checks = [
        compare(f"{approach} vs naive ({tables.size:,} {batch.run_id})", spark.table(table), naive, reference)
        for approach, table in (
            (approach, tables.name(role)) for approach, role in CHECKED_APPROACHES.items()
        )
    ]
    record = {
        "size": tables.size,
        "pattern": batch.pattern,
        "round": batch.round,
        "order": list(order),
        "changes": asdict(batch.mix),
        "approaches": costs,
        "correct": all(check.ok for check in checks),
    }
    return record, checks


def run_benchmark(
    spark: SparkSession,
    config: Config,
    workspace: Path,
    progress: Progress = progress_to_stderr,
    before_compare: BeforeCompare | None = None,
) -> Results:
    """Every size, pattern and round in ``spark`` (its catalog ``config.catalog`` registered).

    ``before_compare`` runs before each round's comparison (a test spoils a table there to see the
    comparison fail)."""
    results = Results(config)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {config.catalog}.{config.database}")
    for size in config.sizes:
        tables = Tables(config.catalog, config.database, size)
        drop_tables(spark, tables)
        built, check = build(spark, tables, workspace / "bronze", progress)
        results.builds.append(built)
        results.checks.append(check)
        progress(f"size {size:,}: silver built by run_job in {built['seconds']:.1f} s")
        measure_rounds(spark, config, tables, workspace / "bronze", progress, before_compare, results)
        drop_tables(spark, tables)  # the next size needs the disk more than anyone needs these
    return results


def measure_rounds(
    spark: SparkSession,
    config: Config,
    tables: Tables,
    bronze: Path,
    progress: Progress,
    before_compare: BeforeCompare | None,
    results: Results,
) -> None:
    """Every pattern's rounds on one size's tables, one after another (see the module docstring)."""
    state = SourceState(live_keys=tables.size, next_id=tables.size)
    for pattern in config.patterns:
        for round_number in range(config.rounds):
            changes = config.changes(pattern, tables.size)
            batch = prepare_batch(spark, tables, bronze, pattern, round_number, changes, state)
            turn = state.batches % len(APPROACHES)
            order = APPROACHES[turn:] + APPROACHES[:turn]
            record, checks = run_round(spark, tables, batch, order, progress, before_compare)
            results.rounds.append(record)
            results.checks.extend(checks)
            state.after(batch.mix)
            shutil.rmtree(batch.folder)
            shutil.rmtree(batch.export)
            for approach in ("floor", "arrow"):
                shutil.rmtree(floor_positions(batch, approach))


def warm_up(spark: SparkSession, config: Config, workspace: Path) -> list[Check]:
    """The untimed first pass, in its own database; its comparisons still count (a wrong merge is
    wrong at any size)."""
    progress_to_stderr(f"warm-up (untimed): one round of every approach at {WARM_UP_SIZE:,} rows")
    small = replace(
        config,
        sizes=(WARM_UP_SIZE,),
        rounds=1,
        fixed_changes=WARM_UP_CHANGES,
        database=f"{config.database}_warm_up",
    )
    return run_benchmark(spark, small, workspace / "warm-up").checks


# --- reporting ----------------------------------------------------------------------------------------


def summarize(results: Results) -> Summary:
    """size -> pattern -> approach -> its figures over the rounds."""
    summary: Summary = {}
    for record in results.rounds:
        summary.setdefault(record["size"], {}).setdefault(record["pattern"], {})
    for size, patterns in summary.items():
        for pattern_name in patterns:
            records = [r for r in results.rounds if (r["size"], r["pattern"]) == (size, pattern_name)]
            patterns[pattern_name] = {
                approach: approach_summary([record["approaches"][approach] for record in records])
                for approach in APPROACHES
            }
    return summary


def approach_summary(costs: list[dict[str, Any]]) -> dict[str, float]:
    """Minimum and median time; bytes and files as medians (they hardly vary between rounds)."""

    def median(*keys: str) -> float:
        return statistics.median(sum(cost[key] for key in keys) for cost in costs)

    return {
        "min_seconds": min(cost["seconds"] for cost in costs),
        "median_seconds": median("seconds"),
        "read_mb": median("input_bytes") / 1e6,
        "scanned_mb": median("scanned_data_bytes", "scanned_delete_bytes") / 1e6,
        "scanned_files": median("scanned_data_files", "scanned_delete_files"),
        "skipped_files": median("skipped_data_files"),
        "written_mb": median("written_bytes") / 1e6,
        "written_files": median("written_data_files", "written_delete_files"),
    }


def evaluate_targets(
    summary: Summary, sizes: Sequence[int], subject: str = "icetide"
) -> list[dict[str, Any]]:
    """Every speed target at every size (they are set for 20M rows), from minimum times.

    ``subject`` names a reference in icetide's place (:data:`REFERENCES`): "bare", what one plain
    Spark MERGE of the batch achieves on this machine without icetide's guarantees; "floor", what
    the reads and writes of a merge alone cost. Their verdicts are printed, never an exit code.
    """
    verdicts = []
    for size in sizes:
        for target in RATIO_TARGETS:
            figures = summary.get(size, {}).get(target.pattern)
            if figures is None:
                continue
            target = target.about(subject)
            value = figures[target.numerator]["min_seconds"] / figures[target.denominator]["min_seconds"]
            verdicts.append(
                {
                    "pattern": target.pattern,
                    "size": size,
                    "ratio": target.label,
                    "value": value,
                    "target": f"{'>=' if target.at_least else '<='} {target.bound:g}",
                    "pass": target.passes(value),
                    "across": False,
                }
            )
    fixed = [
        summary[size]["fixed"][subject]["min_seconds"] for size in sizes if "fixed" in summary.get(size, {})
    ]
    if len(fixed) >= 2:
        value = fixed[-1] / fixed[0]
        verdicts.append(
            {
                "pattern": "fixed",
                "size": max(sizes),
                "ratio": f"{subject}({max(sizes):,})/{subject}({min(sizes):,})",
                "across": True,
                "value": value,
                "target": f"<= {FIXED_GROWTH_TARGET:g}",
                "pass": value <= FIXED_GROWTH_TARGET,
            }
        )
    return verdicts


REPORT_COLUMNS = (
    ("min s", "min_seconds", ".2f"),
    ("median s", "median_seconds", ".2f"),
    ("MB read", "read_mb", ".2f"),
    ("MB scanned", "scanned_mb", ".2f"),
    ("files scanned", "scanned_files", ".0f"),
    ("files skipped", "skipped_files", ".0f"),
    ("MB written", "written_mb", ".3f"),
    ("files written", "written_files", ".0f"),
)


# The references judged by the same targets, in icetide's place: name -> what the report calls them.
REFERENCES = {
    "bare": "the bare MERGE (one plain Spark MERGE, no guarantees)",
    "floor": "the floor (the reads and writes a merge needs, nothing more)",
    "arrow": "the floor in one process (its reads and writes without a Spark job)",
}


def reference_verdicts(summary: Summary, sizes: Sequence[int]) -> dict[str, list[dict[str, Any]]]:
    """The targets' ratios with each reference in icetide's place (printed with PASS or MISS, never
    an exit code)."""
    return {subject: evaluate_targets(summary, sizes, subject) for subject in REFERENCES}


def print_report(
    results: Results,
    summary: Summary,
    verdicts: list[dict[str, Any]],
    references: dict[str, list[dict[str, Any]]],
) -> None:
    """Per size and pattern the figures, icetide's ratios against the targets, and the same ratios
    for each reference (``references``: :func:`reference_verdicts`)."""
    print()
    for built in results.builds:
        print(
            f"build of {built['size']:,} rows by run_job (DMS full load): {built['seconds']:.1f} s, "
            f"{built['input_bytes'] / 1e6:.1f} MB read, {built['written_bytes'] / 1e6:.1f} MB written"
        )
    titled = [
        (f"ratios (minimum over rounds; targets are for {TARGET_ROWS:,} rows)", "icetide", verdicts),
        *[
            (f"the same ratios for {REFERENCES[subject]}; a reference", subject, judged)
            for subject, judged in references.items()
        ],
    ]
    for size, patterns in summary.items():
        for pattern_name, figures in patterns.items():
            mix = next(
                r["changes"] for r in results.rounds if (r["size"], r["pattern"]) == (size, pattern_name)
            )
            print(
                f"\n{size:,} rows, {pattern_name}: {mix['updates']:,} U + {mix['deletes']:,} D + "
                f"{mix['inserts']:,} I per round, {results.config.rounds} round(s)"
            )
            print_table(figures)
            if "floor" in figures:
                over = figures["icetide"]["min_seconds"] / figures["floor"]["min_seconds"]
                print(f"icetide / floor: {over:.2f} (what icetide does beyond the reads and writes)")
            for title, _, judged in titled:
                mine = [
                    v for v in judged if (v["size"], v["pattern"]) == (size, pattern_name) and not v["across"]
                ]
                print_verdicts(title, mine)
    for _, subject, judged in titled:
        across = [verdict for verdict in judged if verdict["across"]]
        about = REFERENCES.get(subject, subject).split(" (")[0]
        print_verdicts(
            f"\nfixed: {about} from the smallest to the largest table (target for {TARGET_ROWS:,})", across
        )
    print_correctness(results.checks)


def print_table(figures: dict[str, dict[str, float]]) -> None:
    header = f"{'approach':<9}" + "".join(f" {title:>{max(len(title), 8)}}" for title, _, _ in REPORT_COLUMNS)
    print(header)
    print("-" * len(header))
    for approach, row in figures.items():
        cells = "".join(f" {row[key]:>{max(len(title), 8)}{fmt}}" for title, key, fmt in REPORT_COLUMNS)
        print(f"{approach:<9}{cells}")


def print_verdicts(title: str, verdicts: list[dict[str, Any]]) -> None:
    if verdicts:
        print(f"{title}:")
    for verdict in verdicts:
        outcome = "PASS" if verdict["pass"] else "MISS"
        print(f"  {verdict['ratio']:<32} {verdict['value']:>8.2f}   target {verdict['target']:<7} {outcome}")


def print_correctness(checks: list[Check]) -> None:
    failed = [check for check in checks if not check.ok]
    if failed:
        listed = "; ".join(check.what for check in failed)
        print(f"\ncorrectness: {len(failed)} of {len(checks)} comparisons DIFFER: {listed}")
    else:
        print(f"\ncorrectness: all {len(checks)} comparisons equal")


def write_json(
    path: Path,
    spark: SparkSession,
    results: Results,
    summary: dict[int, Any],
    verdicts: list[dict[str, Any]],
    references: dict[str, list[dict[str, Any]]],
    argv: Sequence[str],
) -> None:
    config = results.config
    document = {
        "command": list(argv),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "versions": runtime_versions(spark),
        "sizes": list(config.sizes),
        "rounds": config.rounds,
        "patterns": [asdict(pattern) for pattern in config.patterns],
        "fixed_changes": config.fixed_changes,
        "approaches": list(APPROACHES),
        "builds": results.builds,
        "results": results.rounds,
        "summary": {str(size): figures for size, figures in summary.items()},
        "targets": verdicts,
        **{f"{subject}_ratios": judged for subject, judged in references.items()},
        "checks": [{**asdict(check), "ok": check.ok} for check in results.checks],
        "correct": results.correct,
    }
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def write_plot(path: Path, summary: Summary, patterns: Sequence[Pattern]) -> None:
    """Time against table size per approach, one panel per pattern (matplotlib: the bench extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter, NullLocator

    sizes = sorted(summary)
    figure, axes = plt.subplots(1, len(patterns), figsize=(5 * len(patterns), 4), squeeze=False)
    for axis, pattern in zip(axes[0], patterns, strict=True):
        for approach in APPROACHES:
            points = [
                (size, summary[size][pattern.name][approach]["min_seconds"])
                for size in sizes
                if pattern.name in summary[size]
            ]
            axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=approach)
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xticks(sizes, [f"{size:,}" for size in sizes])
        axis.xaxis.set_minor_locator(NullLocator())
        axis.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        axis.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
        axis.set_title(pattern.name)
        axis.set_xlabel("table rows")
        axis.set_ylabel("seconds per run (min over rounds)")
        axis.grid(True, which="both", alpha=0.3)
    axes[0][0].legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


# --- command line -------------------------------------------------------------------------------------


def parse_arguments(argv: Sequence[str]) -> tuple[argparse.Namespace, Config]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES), help="table sizes in rows"
    )
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every size and change count")
    parser.add_argument(
        "--rounds", type=int, default=5, help="rounds per size and pattern (>= 3 for the ratios)"
    )
    parser.add_argument("--patterns", nargs="+", choices=PATTERN_NAMES, default=list(PATTERN_NAMES))
    parser.add_argument(
        "--fixed-changes", type=int, default=DEFAULT_FIXED_CHANGES, help="changed keys per round of 'fixed'"
    )
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"), help="where the JSON and PNG go")
    parser.add_argument("--no-plot", action="store_true", help="skip merge_cost.png (needs matplotlib)")
    parser.add_argument(
        "--no-warm-up", action="store_true", help=f"skip the untimed first pass at {WARM_UP_SIZE:,} rows"
    )
    parser.add_argument("--workspace", type=Path, help="keep bronze and warehouse here (default: a temp dir)")
    parser.add_argument(
        "--catalog",
        default=CATALOG,
        help="Spark catalog name for the workspace's warehouse (one per warehouse)",
    )
    args = parser.parse_args(argv)
    config = Config(
        sizes=tuple(sorted({round(size * args.scale) for size in args.sizes})),
        rounds=args.rounds,
        patterns=tuple(p for p in PATTERNS if p.name in args.patterns),
        fixed_changes=round(args.fixed_changes * args.scale),
        catalog=args.catalog,
    )
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if not args.no_plot and importlib.util.find_spec("matplotlib") is None:
        # Asked now, not when the plot is drawn after the whole run (half an hour at the defaults).
        parser.error(
            "merge_cost.png needs matplotlib: install the bench extra (pip install -e '.[bench]', "
            "as make bench does) or pass --no-plot"
        )
    problem = sampling_problem(config)
    if problem:
        parser.error(problem)
    return args, config


def sampling_problem(config: Config) -> str | None:
    """Why some batch could not be drawn as its pattern says, or None. Checked at the smallest size
    before the first round (the live keys only grow: each round inserts twice what it deletes)."""
    size = min(config.sizes)
    for pattern in config.patterns:
        changes = config.changes(pattern, size)
        if changes < 10:
            return f"{pattern.name}: {changes} changes per batch at {size:,} rows; at least 10 are needed"
        for band, count in zip(pattern.bands, shares(Mix.of(changes).existing, pattern.bands), strict=True):
            keys = int(band.end * size) - int(band.start * size)
            if count > keys:
                return (
                    f"{pattern.name}: {count:,} changed keys wanted from the {keys:,} keys of the newest "
                    f"{band.start:.0%}-{band.end:.0%} at {size:,} rows; lower --fixed-changes or raise "
                    "--sizes"
                )
    return None


def main(argv: Sequence[str] | None = None, before_compare: BeforeCompare | None = None) -> int:
    """Run the benchmark; 1 when a comparison found different rows, else 0 (whatever the speed).

    A caller that already has a Spark session (the tests) gets it reused, with the workspace's
    catalog added, and left running; a session this call starts is stopped at the end.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    args, config = parse_arguments(arguments)
    own_session = not spark_running()
    with tempfile.TemporaryDirectory(prefix="icetide-merge-cost-") as temporary:
        workspace = args.workspace or Path(temporary)
        spark = local_spark_session(
            workspace / "warehouse", catalog=config.catalog, app_name="icetide-bench-merge-cost"
        )
        try:
            warm_up_checks = [] if args.no_warm_up else warm_up(spark, config, workspace)
            results = run_benchmark(spark, config, workspace, before_compare=before_compare)
            results.checks[:0] = warm_up_checks
            summary = summarize(results)
            verdicts = evaluate_targets(summary, config.sizes)
            references = reference_verdicts(summary, config.sizes)
            print_report(results, summary, verdicts, references)
            args.out.mkdir(parents=True, exist_ok=True)
            command = ["benchmarks/merge_cost.py", *arguments]
            write_json(args.out / "merge_cost.json", spark, results, summary, verdicts, references, command)
            if not args.no_plot:
                write_plot(args.out / "merge_cost.png", summary, config.patterns)
        finally:
            if own_session:
                spark.stop()
    progress_to_stderr(f"wrote {args.out}/merge_cost.json" + ("" if args.no_plot else " and merge_cost.png"))
    return 0 if results.correct else 1


if __name__ == "__main__":
    sys.exit(main())
