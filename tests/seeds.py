"""Seeded loops as one test each: a loop checks one behaviour on many generated cases.

``each_seed(seeds, check)`` (the fixture in tests/conftest.py) runs ``check(seed)`` for every seed,
goes on after a seed fails, and fails once naming each failing seed, its error, and the command
that reruns that seed alone (``--seed N``, which also runs a seed outside the loop).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import pytest

EachSeed = Callable[[Iterable[int], Callable[[int], None]], None]


def each_seed_of(nodeid: str, chosen: Sequence[int]) -> EachSeed:
    """The runner of test ``nodeid``: every seed it loops over, or only ``chosen`` when given."""

    def run(seeds: Iterable[int], check: Callable[[int], None]) -> None:
        selected = list(chosen) or list(seeds)
        failures = []
        for seed in selected:
            try:
                check(seed)
            except Exception as error:  # every failing seed is reported, not only the first
                failures.append(f"seed {seed}: {type(error).__name__}: {error}")
        if failures:
            pytest.fail(
                f"{len(failures)} of {len(selected)} seeds failed; rerun one with\n"
                f"  python -m pytest '{nodeid}' --seed N\n" + "\n".join(failures),
                pytrace=False,
            )

    return run
