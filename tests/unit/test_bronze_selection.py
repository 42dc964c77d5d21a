"""Which files a continuous run takes (icetide.run.bronze_selection), against an independent oracle.

The oracle orders DMS names its own way (full-load numbers parsed from hexadecimal, CDC names as
their timestamps) and applies the bounds with a plain loop; seeded random folders cover
checkpoints in either phase, hidden files, ties of sizes and bounds of one file.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from icetide.run.bronze_selection import (
    MAX_NAME_AHEAD_OF_WRITE,
    BronzeFileNotFromDms,
    BronzeFolderInvalid,
    ListedFile,
    at_risk,
    listing_start,
    select_files,
)
from seeds import EachSeed

FOLDER = "dbo/orders/"


def _oracle(files: list[ListedFile], after: str | None, max_files: int, max_bytes: int) -> list[str]:
    def rank(key: str) -> tuple[int, object]:
        name = key.rsplit("/", 1)[-1].removesuffix(".parquet")
        if name.startswith("LOAD"):
            return (0, int(name[4:], 16))
        return (1, datetime.strptime(name, "%Y%m%d-%H%M%S%f"))

    visible = [file for file in files if not file.key.rsplit("/", 1)[-1].startswith(("_", "."))]
    ordered = sorted(visible, key=lambda file: rank(file.key))
    if after is not None:
        ordered = [file for file in ordered if rank(file.key) > rank(after)]
    taken: list[str] = []
    total = 0
    for file in ordered:
        if len(taken) >= max_files:
            break
        if taken and total + file.size > max_bytes:
            break
        taken.append(file.key)
        total += file.size
    return taken


def _random_folder(chooser: random.Random) -> list[ListedFile]:
    loads = chooser.sample(range(1, 300), chooser.randint(0, 12))
    start = datetime(2026, 11, 21, 6)
    times = {start + timedelta(milliseconds=chooser.randint(0, 10**8)) for _ in range(chooser.randint(0, 12))}
    names = [f"LOAD{number:08X}.parquet" for number in loads]
    names += [f"{moment:%Y%m%d-%H%M%S}{moment.microsecond // 1000:03d}.parquet" for moment in times]
    names += chooser.choice([[], ["_SUCCESS"], [".hidden.crc"]])
    return [ListedFile(FOLDER + name, chooser.randint(1, 50)) for name in names]


def _selects_what_the_oracle_selects(seed: int) -> None:
    chooser = random.Random(seed)
    files = _random_folder(chooser)
    dms_files = [file.key for file in files if not file.key.rsplit("/", 1)[-1].startswith(("_", "."))]
    after = chooser.choice([None, *dms_files]) if dms_files else None
    max_files, max_bytes = chooser.randint(1, 8), chooser.randint(1, 150)
    shuffled = chooser.sample(files, len(files))  # S3's order is not DMS's

    taken = select_files(shuffled, table_folder=FOLDER, after=after, max_files=max_files, max_bytes=max_bytes)

    assert [file.key for file in taken] == _oracle(files, after, max_files, max_bytes)


def test_random_folders_select_what_the_oracle_selects(each_seed: EachSeed) -> None:
    each_seed(range(300), _selects_what_the_oracle_selects)


def test_a_file_larger_than_the_byte_bound_is_taken_alone_so_the_table_never_stalls() -> None:
    files = [
        ListedFile(FOLDER + "20261121-060000000.parquet", 500),
        ListedFile(FOLDER + "20261121-070000000.parquet", 1),
    ]

    taken = select_files(files, table_folder=FOLDER, after=None, max_files=10, max_bytes=100)

    assert [file.key for file in taken] == [FOLDER + "20261121-060000000.parquet"]


def test_a_file_dms_would_not_write_fails_the_run_naming_it() -> None:
    files = [ListedFile(FOLDER + "LOAD00000001.csv", 3), ListedFile(FOLDER + "20261121-060000000.parquet", 1)]

    with pytest.raises(BronzeFolderInvalid, match=r"LOAD00000001\.csv.*DataFormat=parquet"):
        select_files(files, table_folder=FOLDER, after=None, max_files=10, max_bytes=100)


@pytest.mark.parametrize(
    ("after", "start"),
    [
        (None, None),
        (FOLDER + "LOAD0000000A.parquet", None),  # CDC names sort before LOAD names: list from the start
        (FOLDER + "20261121-060000000.parquet", FOLDER + "20261121-060000000.parquet"),
    ],
)
def test_the_listing_starts_after_a_cdc_checkpoint_only(after: str | None, start: str | None) -> None:
    assert listing_start(after) == start


def test_a_run_warns_when_its_oldest_file_has_lived_half_the_retention() -> None:
    now = datetime(2026, 11, 21, 12)
    young = ListedFile(FOLDER + "20261121-060000000.parquet", 1, now - timedelta(days=6, hours=23))
    old = ListedFile(FOLDER + "20261114-060000000.parquet", 1, now - timedelta(days=7, hours=1))

    assert at_risk([young], now, retention_days=14) is None
    assert at_risk([old, young], now, retention_days=14) == timedelta(days=7, hours=1)
    assert at_risk([ListedFile(FOLDER + "20261121-060000000.parquet", 1)], now, retention_days=14) is None


RECEIVED = datetime(2026, 11, 21, 7, 0, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("name", "written"),
    [
        # A forged far-future name: merged, it would move the checkpoint past every real file to come.
        ("99991231-235959999.parquet", RECEIVED),
        # Just past the allowance for the instance's clock running ahead of S3's.
        (f"{RECEIVED + MAX_NAME_AHEAD_OF_WRITE + timedelta(seconds=1):%Y%m%d-%H%M%S}000.parquet", RECEIVED),
    ],
)
def test_a_cdc_file_named_later_than_s3_received_it_fails_the_selection_naming_it(
    name: str, written: datetime
) -> None:
    files = [
        ListedFile(FOLDER + "20261121-065900000.parquet", 1, RECEIVED),
        ListedFile(FOLDER + name, 1, written),
    ]

    with pytest.raises(BronzeFileNotFromDms, match=rf"{FOLDER}{name} is named .* but S3 received it at"):
        select_files(files, table_folder=FOLDER, after=None, max_files=10, max_bytes=100)


def test_a_name_within_the_allowance_or_without_a_known_write_time_is_taken() -> None:
    within = RECEIVED + MAX_NAME_AHEAD_OF_WRITE
    files = [
        ListedFile(FOLDER + "20261121-060000000.parquet", 1, None),
        ListedFile(FOLDER + f"{within:%Y%m%d-%H%M%S}000.parquet", 1, RECEIVED),
    ]

    taken = select_files(files, table_folder=FOLDER, after=None, max_files=10, max_bytes=100)

    assert [file.key for file in taken] == [file.key for file in files]


@pytest.mark.parametrize(
    "key",
    [
        "dbo/orders/2026/11/21/20261121-070000000.parquet",  # deeper than DMS writes
        "dbo/other/20261121-070000000.parquet",  # another table's folder
        "20261121-070000000.parquet",  # the task's folder itself
        "dbo/LOAD00000001.parquet",
    ],
)
def test_a_file_outside_the_tables_own_folder_fails_the_selection_naming_it(key: str) -> None:
    files = [ListedFile(FOLDER + "20261121-065900000.parquet", 1, RECEIVED), ListedFile(key, 1, RECEIVED)]

    with pytest.raises(BronzeFileNotFromDms, match=rf"{key} is outside the table's own folder {FOLDER}"):
        select_files(files, table_folder=FOLDER, after=None, max_files=10, max_bytes=100)
