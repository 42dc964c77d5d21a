"""icetide.run.triggers.one_run_per_table: a batch of routed events starts one run per table, the
run of the table's latest event, and answers for every record of the table."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from icetide.run.triggers import EventRun, one_run_per_table

START = datetime(2026, 11, 21, 7, 0, tzinfo=UTC)


def _run(table: str, moment: datetime) -> EventRun:
    return EventRun(table, f"{table}-{moment:%H%M%S}", moment)


def test_random_batches_against_an_oracle() -> None:
    rng = random.Random(47)
    for _ in range(300):
        tables = [f"t{index}" for index in range(rng.randint(1, 4))]
        routed = [
            (f"m{index}", _run(rng.choice(tables), START + timedelta(seconds=rng.randrange(0, 900))))
            for index in range(rng.randint(1, 30))
        ]

        starts = one_run_per_table(routed)

        # Oracle: per table (in order of first appearance), the largest event time, all its ids.
        order = list(dict.fromkeys(run.target_table_name for _, run in routed))
        assert [start.run.target_table_name for start in starts] == order
        for start in starts:
            table = start.run.target_table_name
            mine = [(message_id, run) for message_id, run in routed if run.target_table_name == table]
            assert start.run.event_time == max(run.event_time for _, run in mine)
            assert start.message_ids == tuple(message_id for message_id, _ in mine)


def test_an_empty_batch_starts_nothing() -> None:
    assert one_run_per_table([]) == []
