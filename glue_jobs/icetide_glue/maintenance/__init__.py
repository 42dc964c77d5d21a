"""Maintenance of a silver table and its tombstone table and run ledger, a job of its own:
compaction, snapshot expiry, orphan files and pruned tombstones."""
