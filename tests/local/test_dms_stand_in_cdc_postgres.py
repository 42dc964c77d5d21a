"""PostgreSQL change capture: a real test_decoding slot, advanced only as far as every table has committed.

See test_dms_stand_in_cdc.py for the windows both sources share; here what only PostgreSQL has: the
slot, replica identity, large (TOASTed) values and test_decoding's text.
"""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
import sqlalchemy as sa
from moto import mock_aws

from icetide_local.standins.dms.cdc import (
    SLOT_POSITIONS_TABLE,
    UNCHANGED_TOAST,
    lsn_value,
    parse_test_decoding,
)
from icetide_local.standins.dms.data_mover import replicator_mover
from icetide_local.standins.dms.lifecycle import DmsLifecycle
from local.dms_cdc import DmsCdcDriver, cdc_mapping, drop_slot, execute, stop_at_next_second

pytestmark = pytest.mark.postgres


@pytest.fixture
def slot(postgresql_source) -> str:
    return f"icetide_{postgresql_source.schema}"


@pytest.fixture
def dms(postgresql_source, slot, monkeypatch) -> Iterator[DmsCdcDriver]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws(), DmsLifecycle(mover=replicator_mover(postgresql_source.url)).install():
        yield DmsCdcDriver(boto3.Session(region_name="eu-west-1"), postgresql_source.url, slot)
    drop_slot(postgresql_source, slot)


def table(source, name: str, *extra: sa.Column) -> sa.Table:
    return source.create_table(
        name,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("item", sa.String(20)),
        sa.Column("qty", sa.Integer),
        *extra,
        rows=[{"id": 1, "item": "tea", "qty": 1}],
    )


def confirmed_position(source, slot: str) -> int:
    with source.engine.connect() as connection:
        text = connection.execute(
            sa.text("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = :slot"),
            {"slot": slot},
        ).scalar_one()
    return lsn_value(text)


def position_of(checkpoint: str) -> int:
    return lsn_value(checkpoint.rpartition("#")[2])


def recorded_starts(source, slot: str) -> dict[str, int]:
    """Where each table's capture through ``slot`` last started, as the stand-in keeps it."""
    with source.engine.connect() as connection:
        rows = connection.execute(
            sa.text(
                f"SELECT table_name, position::text FROM public.{SLOT_POSITIONS_TABLE} "  # noqa: S608
                "WHERE slot_name = :slot"
            ),
            {"slot": slot},
        ).all()
    return {name: lsn_value(position) for name, position in rows}


def test_the_slot_is_created_with_test_decoding_and_advanced_to_the_oldest_table_start(
    postgresql_source, slot, dms
):
    schema = postgresql_source.schema
    table(postgresql_source, "orders")
    table(postgresql_source, "lines")
    orders_load = dms.run("full-load-and-cdc", cdc_mapping(schema, "orders"), stop=stop_at_next_second())
    # lines' capture starts where orders' full load ended (its start position, as on a slot endpoint).
    lines_load = dms.run(
        "full-load-and-cdc", cdc_mapping(schema, "lines"), start=orders_load.described["RecoveryCheckpoint"],
        stop=stop_at_next_second(),
    )  # fmt: skip
    with postgresql_source.engine.connect() as connection:
        plugin = connection.execute(
            sa.text("SELECT plugin FROM pg_replication_slots WHERE slot_name = :slot"), {"slot": slot}
        ).scalar_one()
    lines_start = recorded_starts(postgresql_source, slot)["lines"]

    execute(postgresql_source, "INSERT INTO {schema}.orders VALUES (2, 'cake', 2)")
    orders_changes = dms.run(
        "cdc", cdc_mapping(schema, "orders"), start=orders_load.described["RecoveryCheckpoint"],
        stop=stop_at_next_second(),
    )  # fmt: skip
    after_first_window = confirmed_position(postgresql_source, slot)
    dms.run(
        "cdc", cdc_mapping(schema, "orders"), start=orders_changes.described["RecoveryCheckpoint"],
        stop=stop_at_next_second(),
    )  # fmt: skip
    held_back_by_lines = confirmed_position(postgresql_source, slot)
    lines_changes = dms.run(
        "cdc", cdc_mapping(schema, "lines"), start=lines_load.described["RecoveryCheckpoint"],
        stop=stop_at_next_second(),
    )  # fmt: skip

    assert plugin == "test_decoding"
    assert orders_changes.rows("orders", "Op", "id") == [("I", 2)]
    assert lines_changes.files == {}
    assert after_first_window == position_of(orders_load.described["RecoveryCheckpoint"])
    # orders has committed past lines' start, but lines has not: the slot keeps what lines still needs.
    assert held_back_by_lines == lines_start < position_of(orders_changes.described["RecoveryCheckpoint"])
    assert recorded_starts(postgresql_source, slot) == {
        "orders": position_of(orders_changes.described["RecoveryCheckpoint"]),
        "lines": position_of(lines_load.described["RecoveryCheckpoint"]),
    }
    assert confirmed_position(postgresql_source, slot) == min(
        recorded_starts(postgresql_source, slot).values()
    )


def test_a_checkpoint_older_than_the_slot_fails_the_task(postgresql_source, dms):
    schema = postgresql_source.schema
    table(postgresql_source, "orders")
    mapping = cdc_mapping(schema, "orders")
    load = dms.run("full-load-and-cdc", mapping, stop=stop_at_next_second())
    execute(postgresql_source, "INSERT INTO {schema}.orders VALUES (2, 'cake', 2)")
    first = dms.run("cdc", mapping, start=load.described["RecoveryCheckpoint"], stop=stop_at_next_second())
    dms.run("cdc", mapping, start=first.described["RecoveryCheckpoint"], stop=stop_at_next_second())

    stale = dms.run("cdc", mapping, start=load.described["RecoveryCheckpoint"], stop=stop_at_next_second())

    assert stale.described["Status"] == "failed"
    assert "no longer retained" in stale.described["LastFailureMessage"]


def test_replica_identity_full_gives_whole_d_rows_and_unchanged_large_values(postgresql_source, dms):
    schema = postgresql_source.schema
    table(postgresql_source, "orders", sa.Column("notes", sa.Text))
    big = "".join(f"{n:08x}" for n in range(20_000))  # incompressible enough to be stored out of line
    execute(
        postgresql_source,
        "ALTER TABLE {schema}.orders REPLICA IDENTITY FULL",
        f"UPDATE {{schema}}.orders SET notes = '{big}' WHERE id = 1",  # noqa: S608 (hex digits)
    )
    mapping = cdc_mapping(schema, "orders")
    load = dms.run("full-load-and-cdc", mapping, stop=stop_at_next_second())
    execute(
        postgresql_source,
        "UPDATE {schema}.orders SET qty = 5 WHERE id = 1",
        "DELETE FROM {schema}.orders WHERE id = 1",
    )
    changes = dms.run("cdc", mapping, start=load.described["RecoveryCheckpoint"], stop=stop_at_next_second())

    assert changes.rows("orders", "Op", "id", "item", "qty", "notes") == [
        ("U", 1, "tea", 5, big),
        ("D", 1, "tea", 5, big),
    ]


def test_a_large_value_an_update_left_out_is_a_table_error_under_the_default_identity(postgresql_source, dms):
    schema = postgresql_source.schema
    table(postgresql_source, "orders", sa.Column("notes", sa.Text))
    big = "".join(f"{n:08x}" for n in range(20_000))
    execute(postgresql_source, f"UPDATE {{schema}}.orders SET notes = '{big}' WHERE id = 1")  # noqa: S608
    mapping = cdc_mapping(schema, "orders")
    load = dms.run("full-load-and-cdc", mapping, stop=stop_at_next_second())
    execute(postgresql_source, "UPDATE {schema}.orders SET qty = 5 WHERE id = 1")
    changes = dms.run("cdc", mapping, start=load.described["RecoveryCheckpoint"], stop=stop_at_next_second())

    assert changes.described["Status"] == "failed"
    assert "REPLICA IDENTITY FULL" in changes.described["LastFailureMessage"]
    assert "'notes'" in changes.described["LastFailureMessage"]


def test_a_key_only_d_row_passes_a_filter_on_a_column_it_lacks(postgresql_source, dms):
    schema = postgresql_source.schema
    table(postgresql_source, "orders")
    qty_at_least_1 = {"filter-type": "source", "column-name": "qty",
                      "filter-conditions": [{"filter-operator": "gte", "value": "1"}]}  # fmt: skip
    mapping = cdc_mapping(schema, "orders", qty_at_least_1)
    load = dms.run("full-load-and-cdc", mapping, stop=stop_at_next_second())
    execute(
        postgresql_source,
        "INSERT INTO {schema}.orders VALUES (2, 'free', 0)",
        "DELETE FROM {schema}.orders WHERE id = 1",
    )
    changes = dms.run("cdc", mapping, start=load.described["RecoveryCheckpoint"], stop=stop_at_next_second())
    assert changes.rows("orders", "Op", "id", "qty") == [("D", 1, None)]


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        (
            "table public.t: INSERT: id[integer]:1 name[character varying]:'it''s' note[text]:'null' "
            "gone[text]:null",
            ("public", "t", "I", {"id": "1", "name": "it's", "note": "null", "gone": None}),
        ),
        (
            'table "My Schema"."Odd ""T""": UPDATE: "Col A"[text[]]:\'{a,"b c"}\' bits[bit]:B\'101\'',
            ("My Schema", 'Odd "T"', "U", {"Col A": '{a,"b c"}', "bits": "101"}),
        ),
        (
            "table s.t: UPDATE: old-key: id[integer]:1 big[text]:'old' new-tuple: id[integer]:2 "
            "big[text]:unchanged-toast-datum",
            ("s", "t", "U", {"id": "2", "big": "old"}),
        ),
        ("table s.t: UPDATE: id[integer]:2 big[text]:unchanged-toast-datum",
         ("s", "t", "U", {"id": "2", "big": UNCHANGED_TOAST})),
        ("table s.t: DELETE: id[integer]:2", ("s", "t", "D", {"id": "2"})),
        ("table s.t: DELETE: (no-tuple-data)", ("s", "t", "D", {})),
        ("table s.t: TRUNCATE: (no-flags)", None),
    ],
    ids=["insert", "quoted-names", "old-key", "toast", "delete", "no-identity", "truncate"],
)  # fmt: skip
def test_test_decoding_lines_are_read_with_quoting_and_nulls(line, parsed):
    assert parse_test_decoding(line) == parsed
