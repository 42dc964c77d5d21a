"""Files of silver, its tombstone table and the batch as pyarrow opens and writes them: local
paths (Iceberg names them ``file:/x``) and object stores (``s3://`` on Glue) through pyarrow's
file systems, one place for both."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from pyarrow import fs

# Iceberg's metadata names local files with a scheme; pyarrow's local file system takes plain paths.
LOCAL_SCHEME = "file:"


def local_path(path: str) -> str:
    """``path`` as pyarrow's local file system opens it (``file:/x`` and ``file:///x`` are ``/x``)."""
    if path.startswith(LOCAL_SCHEME):
        path = path[len(LOCAL_SCHEME) :]
        if path.startswith("///"):
            path = path[2:]
    return path


def file_system(path: str) -> tuple[fs.FileSystem, str]:
    """The pyarrow file system of ``path`` and the path within it (a plain path or ``file:`` is
    local; any other scheme, ``s3://`` on Glue, is resolved by pyarrow, region included)."""
    if path.startswith(LOCAL_SCHEME) or "://" not in path:
        return fs.LocalFileSystem(), local_path(path)
    scheme, rest = path.split("://", 1)
    if scheme in ("s3a", "s3n"):
        scheme = "s3"
    bucket = rest.split("/", 1)[0]
    return _object_store(f"{scheme}://{bucket}"), rest


@lru_cache(maxsize=16)
def _object_store(root: str) -> fs.FileSystem:
    """One file system per bucket (pyarrow finds an S3 bucket's region with a request)."""
    system, _ = fs.FileSystem.from_uri(root)
    return system


@contextmanager
def open_input(path: str) -> Iterator[Any]:
    """``path`` opened for random access reads (a Parquet footer first, then its pages)."""
    system, inner = file_system(path)
    with system.open_input_file(inner) as source:
        yield source


@contextmanager
def open_output(path: str) -> Iterator[Any]:
    """``path`` opened for writing, its folder made first on a local file system."""
    system, inner = file_system(path)
    if isinstance(system, fs.LocalFileSystem):
        system.create_dir(inner.rsplit("/", 1)[0], recursive=True)
    with system.open_output_stream(inner) as sink:
        yield sink


def file_size(path: str) -> int:
    """The size of the file at ``path`` in bytes."""
    system, inner = file_system(path)
    return int(system.get_file_info(inner).size)
