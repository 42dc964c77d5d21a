"""An oracle of silver's stored values hash, written apart from the job's SQL.

XXH64 with Spark's seed (42), as a signed 64-bit number, of the JSON object holding each value's
text (null values left out, keys in column order, no spaces). The texts are written out by the
tests themselves, so a change of the job's hash definition shows up as a mismatch here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import xxhash

_SPARK_SEED = 42


def values_hash(texts: Mapping[str, str | None]) -> int:
    """The hash silver should store for a row whose compared columns read as ``texts``."""
    present = {name: text for name, text in texts.items() if text is not None}
    document = json.dumps(present, separators=(",", ":"), ensure_ascii=False)
    digest = xxhash.xxh64_intdigest(document.encode("utf-8"), seed=_SPARK_SEED)
    return digest - 2**64 if digest >= 2**63 else digest


def int_text(value: int | None) -> str | None:
    """An integer column's text in the hash (None: null, left out)."""
    return None if value is None else str(value)
