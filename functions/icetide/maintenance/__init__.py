"""Table maintenance (issue 14): one run per table and maintenance slot, under the table's lock.

A maintenance run compacts a silver table, rewrites its delete files, expires old snapshots and
removes orphan files (the Glue job ``maintain_silver``). It holds the same lock as a merge run, so
the two never work on one table at once. These modules hold what the maintenance handlers decide
without AWS: which tables are due (``schedule``), the plan the lock hands to the state machine
(``plan``), the handlers' inputs (``inputs``) and what is recorded from the job's report (``record``).
"""
