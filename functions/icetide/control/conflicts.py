"""Control items that cannot live side by side: two items for one silver table, or two tables whose
bronze folders meet.

Each item is valid alone, so only a look at all of them finds this. DynamoDB keys are case-sensitive,
but the Glue Data Catalog lowercases table names, so `Orders` and `orders` would load one silver table
with two watermarks. A table whose bronze folder lies inside another's would merge the other's files
(:mod:`icetide.control.bronze_folders`). Both `icetide tables validate` and StartWorkflow ask here,
so a file that validates is one the scheduler runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from icetide.control.bronze_folders import folders_meet, table_bronze_folder
from icetide.control.model import ControlItem


def find_conflicts(items: Sequence[ControlItem]) -> dict[int, str]:
    """One "attribute: reason" line per conflicting item, keyed by its position in `items`.

    Every item of a clashing group is reported, not only the later ones: which of them the user meant
    is theirs to say, and running either would be a guess.
    """
    conflicts = _same_table(items)
    for position, line in _meeting_folders(items).items():
        conflicts[position] = f"{conflicts[position]}; {line}" if position in conflicts else line
    return dict(sorted(conflicts.items()))


def _same_table(items: Sequence[ControlItem]) -> dict[int, str]:
    """Items naming one silver table (names equal but for case)."""
    positions: dict[str, list[int]] = defaultdict(list)
    for position, item in enumerate(items):
        positions[item.target_table_name.lower()].append(position)
    conflicts = {}
    for group in positions.values():
        if len(group) < 2:
            continue
        for position in group:
            name = items[position].target_table_name
            others = sorted({items[other].target_table_name for other in group if other != position} - {name})
            if others:
                conflicts[position] = (
                    f"targetTableName: {name!r} differs only in case from {', '.join(map(repr, others))}; "
                    f"the Glue catalog lowercases table names, so they would load the same silver "
                    f"table {name.lower()}: rename or remove all but one"
                )
            else:
                conflicts[position] = (
                    f"targetTableName: {name!r} is the name of another item too; "
                    "each table needs exactly one control item: remove all but one"
                )
    return conflicts


def _meeting_folders(items: Sequence[ControlItem]) -> dict[int, str]:
    """Items of different silver tables whose bronze folders meet, each naming the other(s)."""
    folders = [table_bronze_folder(item) for item in items]
    meeting: dict[int, list[int]] = defaultdict(list)
    for position, folder in enumerate(folders):
        for other in range(position + 1, len(items)):
            same_table = items[other].target_table_name.lower() == items[position].target_table_name.lower()
            if not same_table and folders_meet(folder, folders[other]):
                meeting[position].append(other)
                meeting[other].append(position)
    return {
        position: (
            f"outputS3Prefix: {items[position].target_table_name}'s bronze folder {folders[position]!r} "
            f"meets {', '.join(f'{items[o].target_table_name} ({folders[o]!r})' for o in others)}: one "
            "folder lies inside the other, so a run would read the other table's files; give one of them "
            "another outputS3Prefix"
        )
        for position, others in meeting.items()
    }
