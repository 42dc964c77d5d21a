"""Names and values as Spark SQL text: every identifier quoted with backticks and every value a
quoted literal, since source column names come from other people's databases and may contain
anything."""

from __future__ import annotations


def quote_identifier(name: str) -> str:
    """Backtick-quote one name part (a backtick inside is doubled, as Spark SQL expects)."""
    return "`" + name.replace("`", "``") + "`"


def qualified_name(*parts: str) -> str:
    """``catalog.database.table`` (or any number of parts), each part quoted."""
    return ".".join(quote_identifier(part) for part in parts)


def string_literal(value: str) -> str:
    """A Spark SQL string literal: backslashes and single quotes escaped."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
