"""A run's changes: normalized from bronze (DMS's columns, change time, sequence, phase),
deduplicated to the latest change per key, checked against DMS's row counts, their key ranges and
new watermark, and the schema changes silver must follow."""
