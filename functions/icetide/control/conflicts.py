"""Control items that cannot live side by side: two items for one silver table.

Each item is valid alone, so only a look at all of them finds this. DynamoDB keys are case-sensitive,
but the Glue Data Catalog lowercases table names, so `Orders` and `orders` would load one silver table
with two watermarks (and, before DMS identifiers told them apart, share DMS tasks). Both
`icetide tables validate` and StartWorkflow ask here, so a file that validates is one the scheduler
runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from icetide.control.model import ControlItem


def find_conflicts(items: Sequence[ControlItem]) -> dict[int, str]:
    """One "targetTableName: reason" line per conflicting item, keyed by its position in `items`.

    Every item of a clashing group is reported, not only the later ones: which of them the user meant
    is theirs to say, and running either would be a guess.
    """
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
