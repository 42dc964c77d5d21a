"""The DMS stand-in: what AWS DMS does for a run, done locally inside moto's DMS backend.

``lifecycle`` moves replication tasks through DMS's statuses and calls a pluggable data mover when
a task starts running; ``replicator``, ``source`` and ``s3_target`` move the rows.
"""
