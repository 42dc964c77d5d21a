"""Silver's values hash (``_icetide_values_hash``) of a batch's rows on the driver, without a Spark
job: the very number :func:`icetide_glue.merge.sql.values_hash_sql` gives in Spark, so a row the
driver writes stores what the Spark path would have stored, and later compares with.

Two parts, both over whole columns at once (a loop per row in Python costs more than the rest
of a driver merge). The text: the JSON document Spark's ``to_json`` writes of the compared
columns' exact texts (:func:`icetide_glue.merge.sql._exact_text`), null fields left out, strings
escaped as Jackson escapes them (``"`` and ``\\``, ``\\b \\t \\n \\f \\r``, other characters below
0x20 as ``\\u00XX``, anything else as its UTF-8 bytes). The hash: XXH64 with Spark's seed (42) of
those bytes (Spark's ``XXH64.hashUnsafeBytes``, the reference algorithm reading words
little-endian), in numpy's wrapping uint64 arithmetic, one step per 32-byte stripe for every
row still that long.

A double's text is ``java.lang.Double.toString`` of the running JVM's Java, which differs from
Python's ``repr`` in digits and notation: it is asked of the driver's own JVM, one call per
column (``java.util.Arrays.toString`` of the column's doubles), never reimplemented here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Spark's xxhash64 seed, and XXH64's primes.
SPARK_SEED = 42
_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
_STRIPE = 32

# Jackson's escapes of the characters it does not write as themselves.
_SHORT_ESCAPES = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"}
_ESCAPES = {code: _SHORT_ESCAPES.get(code, f"\\u{code:04X}") for code in [*range(0x20), 0x22, 0x5C]}
_HEX_DIGITS = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)
_WHOLE_NUMBERS = ("tinyint", "smallint", "int", "bigint", "boolean", "date")
_FLOATING = ("float", "double")


def hashable_kind(kind: str) -> bool:
    """Whether :func:`values_hash` computes the text of a column of Spark type ``kind``
    (``DataType.simpleString()``)."""
    return kind in (*_WHOLE_NUMBERS, *_FLOATING, "string", "binary", "timestamp", "timestamp_ntz") or (
        kind.startswith("decimal(")
    )


def values_hash(rows: pa.Table, columns: Sequence[tuple[str, str]], java: Any = None) -> pa.Array:
    """The values hash (int64, never null) of each of ``rows``, over ``columns`` given as (name,
    Spark type name) as :func:`icetide_glue.merge.sql.values_hash_sql` takes them; ``rows`` holds
    them with the Arrow types silver's rows are read with (icetide_glue.driver.arrow_types).
    ``java``: the driver's JVM (py4j's view), needed only for a float or double column."""
    if not columns:
        raise ValueError("hashing values needs at least one column")
    return pa.array(xxhash64(json_documents(rows, columns, java)), pa.int64())


def json_documents(rows: pa.Table, columns: Sequence[tuple[str, str]], java: Any = None) -> pa.Array:
    """Each row's JSON document as Spark's ``to_json`` writes the struct of ``columns``' texts.

    Joined in one pass: a column without nulls is a constant part (its label) and its text; a
    column with nulls is one part, empty where the value is null, that carries its own leading
    comma. Every field but the first begins with a comma, so when the first field may be missing
    the document is joined with every field's comma and the first character of the body dropped.
    """
    texts = [
        (_label(name), _json_text(exact_text(rows.column(name), kind, java), kind)) for name, kind in columns
    ]
    first_always_present = texts[0][1].null_count == 0
    parts: list[Any] = []
    constant = "{" if first_always_present else ""
    for index, (label, text) in enumerate(texts):
        comma = "" if index == 0 and first_always_present else ","
        if text.null_count == 0:
            parts += [f'{constant}{comma}"{label}":"', text]
            constant = '"'
        else:
            # A null field is left out: its part is empty, separator and all.
            field = pc.binary_join_element_wise(f'{comma}"{label}":"', text, '"', "").fill_null("")
            parts += [constant, field] if constant else [field]
            constant = ""
    if first_always_present:
        return pc.binary_join_element_wise(*parts, constant + "}", "")
    body = pc.binary_join_element_wise(*parts, constant, "")
    return pc.binary_join_element_wise("{", pc.utf8_slice_codeunits(body, 1), "}", "")


def _json_text(text: pa.Array, kind: str) -> pa.Array:
    """A column's texts as Jackson writes them inside a JSON string: only a string column's may
    hold a character it escapes; every other kind's text is digits, signs, points, letters and
    the spaces and colons of a time (:func:`exact_text`)."""
    return escaped(text) if kind == "string" else text


def _label(name: str) -> str:
    """A column's name as Jackson writes it inside the document's quotes."""
    label: str = escaped(pa.array([name], pa.string()))[0].as_py()
    return label


def exact_text(values: pa.ChunkedArray | pa.Array, kind: str, java: Any = None) -> pa.Array:
    """The text Spark's ``_exact_text`` gives each value of a column of Spark type ``kind`` (null
    stays null)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if kind == "string":
        return values.cast(pa.string())
    if kind in _WHOLE_NUMBERS or kind.startswith("decimal("):
        # Arrow writes a decimal as Java's BigDecimal.toString does (an exponent below -6: E-notation).
        return pc.cast(values, pa.string())
    if kind == "timestamp":
        return pc.cast(pc.cast(values, pa.timestamp("us", tz="UTC")).cast(pa.int64()), pa.string())
    if kind == "timestamp_ntz":
        return _local_timestamp_text(values)
    if kind == "binary":
        return _hex(values.cast(pa.binary()))
    if kind in _FLOATING:
        return _double_text(values, java)
    raise ValueError(f"no values hash of a column of type {kind}")


def _local_timestamp_text(values: pa.Array) -> pa.Array:
    """Spark's text of a timestamp without time zone: seconds always, then the fraction's digits
    without trailing zeros."""
    text = pc.cast(pc.cast(values, pa.timestamp("us")), pa.string())
    text = pc.replace_substring_regex(text, r"\.000000$", "")
    return pc.replace_substring_regex(text, r"(\.[0-9]*[1-9])0+$", r"\1")


def _hex(values: pa.Array) -> pa.Array:
    """Upper-case hex of each binary value (Spark's ``hex``)."""
    offsets, data = _layout(values)
    digits = np.empty((len(data), 2), dtype=np.uint8)
    digits[:, 0] = _HEX_DIGITS[data >> 4]
    digits[:, 1] = _HEX_DIGITS[data & 0x0F]
    hex_offsets = (offsets - offsets[0]) * 2
    validity = pc.is_valid(values).buffers()[1] if values.null_count else None
    text = pa.LargeStringArray.from_buffers(
        len(values), pa.py_buffer(hex_offsets), pa.py_buffer(digits.tobytes()), validity, values.null_count
    )
    return text.cast(pa.string())


def _double_text(values: pa.Array, java: Any) -> pa.Array:
    """``java.lang.Double.toString`` of each value widened to a double, -0.0 as 0.0 (Spark's
    ``CAST(CASE WHEN v = 0 THEN 0.0D ELSE CAST(v AS DOUBLE) END AS STRING)``), from the JVM."""
    if java is None:
        raise ValueError("a double's text is the JVM's: values_hash needs the driver's JVM")
    doubles = values.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
    # Each distinct value crosses to the JVM once (columns of prices, rates and flags repeat).
    distinct, where = np.unique(np.where(doubles == 0, 0.0, doubles), return_inverse=True)
    if not len(distinct):
        return pa.array([], pa.string())
    # A byte buffer's doubles are big-endian unless told otherwise: ">f8" needs no further call.
    held = java.java.nio.ByteBuffer.wrap(bytearray(distinct.astype(">f8").tobytes())).asDoubleBuffer()
    array = _new_double_array(java, len(distinct))
    held.get(array)
    # "[a, b, c]": Arrays.toString writes each element as String.valueOf(double) does.
    listed = str(java.java.util.Arrays.toString(array))[1:-1]
    texts = pc.list_flatten(pc.split_pattern(pa.array([listed], pa.string()), ", "))
    text = texts.take(pa.array(where.reshape(-1)))
    return pc.if_else(pc.is_null(values), pa.scalar(None, pa.string()), text)


def _new_double_array(java: Any, size: int) -> Any:
    """A new ``double[]`` of ``size`` in the JVM."""
    return java.java.lang.reflect.Array.newInstance(java.java.lang.Double.TYPE, size)


def escaped(text: pa.Array) -> pa.Array:
    """``text`` as Jackson writes it inside a JSON string (without the quotes)."""
    _, present = _layout(text)
    special = np.unique(present[(present < 0x20) | (present == 0x22) | (present == 0x5C)])
    # The backslash first: the escapes after it add backslashes of their own.
    for code in sorted((int(c) for c in special), key=lambda c: c != 0x5C):
        text = pc.replace_substring(text, chr(code), _ESCAPES[code])
    return text


def _layout(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The offsets (int64, one more than the values) and the bytes (uint8, from the first
    value's) of a string or binary array, without a copy of the bytes."""
    values = values.cast(pa.large_binary())
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[
        values.offset : values.offset + len(values) + 1
    ]
    data_buffer = values.buffers()[2]
    if data_buffer is None:
        return offsets, np.zeros(0, dtype=np.uint8)
    return offsets, np.frombuffer(data_buffer, dtype=np.uint8)[offsets[0] : offsets[-1]]


def xxhash64(documents: pa.Array, seed: int = SPARK_SEED) -> np.ndarray:
    """XXH64 of each value's bytes with ``seed``, as Spark's ``xxhash64`` gives it (int64)."""
    offsets, data = _layout(documents)
    # A stripe's zero bytes past the last value: every step below reads a word at each row's place,
    # also in rows already past their end (the result is then left out), and stays in the buffer.
    data = np.concatenate([data, np.zeros(_STRIPE, dtype=np.uint8)])
    # Every byte offset read as a little-endian word (unaligned views: gathers need no copy first).
    words = np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    halves = np.ndarray((len(data) - 3,), dtype="<u4", buffer=data, strides=(1,))
    start = offsets[:-1] - offsets[0]
    length = np.diff(offsets)
    with np.errstate(over="ignore"):
        return _xxh64(words, halves, data, start, length, np.uint64(seed)).view(np.int64)


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return _rotl(acc + lane * _P2, 31) * _P1


def _rotl(value: np.ndarray, bits: int) -> np.ndarray:
    return (value << np.uint64(bits)) | (value >> np.uint64(64 - bits))


def _xxh64(
    words: np.ndarray,
    halves: np.ndarray,
    data: np.ndarray,
    start: np.ndarray,
    length: np.ndarray,
    seed: np.uint64,
) -> np.ndarray:
    """Every row's hash, each step over whole columns: a step some rows do not take (a stripe past
    their length, a tail word they lack) is computed for every row and kept only where it is
    taken (``np.where``), which costs less than gathering and scattering those rows."""
    stripes = length // _STRIPE
    acc = np.full(len(length), seed + _P5, dtype=np.uint64)
    long_rows = np.flatnonzero(stripes)
    if len(long_rows):
        left = stripes[long_rows]
        lanes = [
            np.full(len(long_rows), value, dtype=np.uint64)
            for value in (seed + _P1 + _P2, seed + _P2, seed, seed - _P1)
        ]
        at = start[long_rows]
        for step in range(int(left.max())):
            taken = left > step
            for index, lane in enumerate(lanes):
                stepped = _round(lane, words[at + 8 * index])
                lanes[index] = stepped if taken.all() else np.where(taken, stepped, lane)
            # A row past its last stripe stays at its end: its reads stay within the padding.
            at = at + _STRIPE * taken
        merged = _rotl(lanes[0], 1) + _rotl(lanes[1], 7) + _rotl(lanes[2], 12) + _rotl(lanes[3], 18)
        for lane in lanes:
            merged = (merged ^ _round(np.zeros_like(lane), lane)) * _P1 + _P4
        acc[long_rows] = merged
    acc += length.astype(np.uint64)
    at = start + stripes * _STRIPE
    rest = length - stripes * _STRIPE
    zeros = np.zeros(len(length), np.uint64)
    for word in range(3):
        taken = rest >= 8 * (word + 1)
        if taken.any():
            stepped = _rotl(acc ^ _round(zeros, words[at + 8 * word]), 27) * _P1 + _P4
            acc = np.where(taken, stepped, acc)
    at = at + (rest // 8) * 8
    rest = rest % 8
    taken = rest >= 4
    if taken.any():
        stepped = _rotl(acc ^ (halves[at].astype(np.uint64) * _P1), 23) * _P2 + _P3
        acc = np.where(taken, stepped, acc)
        at = np.where(taken, at + 4, at)
        rest = np.where(taken, rest - 4, rest)
    for byte in range(3):
        taken = rest > byte
        if taken.any():
            stepped = _rotl(acc ^ (data[at + byte].astype(np.uint64) * _P5), 11) * _P1
            acc = np.where(taken, stepped, acc)
    acc ^= acc >> np.uint64(33)
    acc *= _P2
    acc ^= acc >> np.uint64(29)
    acc *= _P3
    acc ^= acc >> np.uint64(32)
    return acc
