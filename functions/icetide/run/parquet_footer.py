"""How many rows a parquet file holds, read from its footer alone.

A continuous run counts the rows of the files it selected before any Glue job reads them
(icetide.run.change_count), and the Lambda package carries no parquet library. The count is in the
footer: a parquet file ends with its ``FileMetaData`` (Thrift compact protocol), the metadata's
length (4 bytes, little-endian) and ``PAR1``; ``num_rows`` is the metadata's field 3 (Apache Parquet
format, parquet.thrift). So two ranged reads of the file's end are enough: the last bytes give the
length, and the metadata is read until field 3.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

MAGIC = b"PAR1"
TAIL = 8  # the metadata's length and the magic
_NUM_ROWS_FIELD = 3

# Thrift compact protocol types (thrift's compact protocol specification).
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)


class NotAParquetFile(ValueError):
    """The bytes are not the end of a parquet file, or its metadata cannot be read."""


def metadata_length(tail: bytes) -> int:
    """The length of the footer's metadata, from the file's last ``TAIL`` bytes."""
    if len(tail) < TAIL or tail[-4:] != MAGIC:
        raise NotAParquetFile("the file does not end with parquet's magic bytes PAR1")
    (length,) = struct.unpack("<i", tail[-8:-4])
    if length <= 0:
        raise NotAParquetFile(f"the footer's metadata length is {length}")
    return length


def footer_rows(metadata: bytes) -> int:
    """``num_rows`` of a ``FileMetaData`` serialised with Thrift's compact protocol."""
    reader = _Reader(metadata)
    field_id = 0
    while True:
        header = reader.byte()
        if header == 0:
            raise NotAParquetFile("the footer's metadata has no num_rows")
        kind, delta = header & 0x0F, header >> 4
        field_id = field_id + delta if delta else reader.zigzag()
        if field_id == _NUM_ROWS_FIELD and kind == _I64:
            rows = reader.zigzag()
            if rows < 0:
                raise NotAParquetFile(f"the footer says the file holds {rows} rows")
            return rows
        reader.skip(kind)


class _Reader:
    """A position in compact-protocol bytes; every read past the end is NotAParquetFile."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0

    def byte(self) -> int:
        if self._at >= len(self._data):
            raise NotAParquetFile("the footer's metadata ends early")
        value = self._data[self._at]
        self._at += 1
        return value

    def take(self, count: int) -> None:
        if count < 0 or self._at + count > len(self._data):
            raise NotAParquetFile("the footer's metadata ends early")
        self._at += count

    def varint(self) -> int:
        value = shift = 0
        while True:
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def zigzag(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def skip(self, kind: int) -> None:
        skips: dict[int, Callable[[], None]] = {
            _TRUE: lambda: None,
            _FALSE: lambda: None,
            _BYTE: lambda: self.take(1),
            _I16: self._skip_varint,
            _I32: self._skip_varint,
            _I64: self._skip_varint,
            _DOUBLE: lambda: self.take(8),
            _BINARY: lambda: self.take(self.varint()),
            _LIST: self._skip_list,
            _SET: self._skip_list,
            _MAP: self._skip_map,
            _STRUCT: self._skip_struct,
        }
        if kind not in skips:
            raise NotAParquetFile(f"the footer's metadata has an unknown Thrift type {kind}")
        skips[kind]()

    def _skip_varint(self) -> None:
        self.varint()

    def _skip_element(self, kind: int) -> None:
        # A boolean inside a list or map takes a byte of its own.
        if kind in (_TRUE, _FALSE):
            self.take(1)
        else:
            self.skip(kind)

    def _skip_list(self) -> None:
        header = self.byte()
        size, kind = header >> 4, header & 0x0F
        if size == 15:
            size = self.varint()
        for _ in range(size):
            self._skip_element(kind)

    def _skip_map(self) -> None:
        size = self.varint()
        if size == 0:
            return
        kinds = self.byte()
        for _ in range(size):
            self._skip_element(kinds >> 4)
            self._skip_element(kinds & 0x0F)

    def _skip_struct(self) -> None:
        while True:
            header = self.byte()
            if header == 0:
                return
            if not header >> 4:
                self.zigzag()
            self.skip(header & 0x0F)
