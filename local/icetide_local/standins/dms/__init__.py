"""The DMS stand-in: what AWS DMS does for a run, done locally inside moto's DMS backend.

``lifecycle`` moves replication tasks through DMS's statuses and calls a pluggable data mover when
a task starts running; ``endpoints`` makes endpoint identifiers unique, as DMS does.
``replicator``, ``source`` and ``s3_target`` move the rows (a full load from a real database into
DMS's parquet files, and the changes since, as CDC files); ``cdc`` captures those changes (triggers
and a change log on SQLite, a logical replication slot on PostgreSQL); ``data_mover`` plugs the
replicator into the lifecycle for the local stack.
"""
