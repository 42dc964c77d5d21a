"""icetide on one machine: the real handlers, state machine and Glue job, with stand-ins for AWS.

Read it in this order (docs/local.md has the user's side):

``local_stack``      :class:`~icetide_local.local_stack.LocalStack`, THE local stack: the whole
                     application, data really moving, cycles started through StartWorkflow.
``workspace_cycle``  one cycle of ``icetide local run``: workspace state in, LocalStack, state out.
``workspace``        the directory that keeps state between cycles (control table, warehouse, logs).
``cycle_report``     what a cycle did, per table, and its text for the terminal.
``demo``             ``icetide local demo`` (``make demo``) on ``sample_source``'s SQLite shop.

``stepfunctions/``   the table-run state machine executed by moto's interpreter, with icetide's
                     handlers in-process (:class:`~icetide_local.stepfunctions.TableRunHarness`, which
                     LocalStack extends; the state-machine tests use it with fake data movement),
                     moto's interpreter fixes, injected faults and the execution report.
``standins/``        what stands in for AWS services moto cannot run: ``dms/`` (task lifecycle in
                     moto's DMS, and the replicator that writes DMS's files from a real database),
                     ``glue`` (Glue job runs that call a Python runner) and ``glue_spark`` (that runner:
                     the real Glue job on local Spark).
``spark``, ``jars``  the local Spark session with an Iceberg file-system catalog; its jars (Iceberg's,
                     and a local file system that starts no process per file).
``postgres``         a throwaway PostgreSQL server for tests and local runs.

Nothing here is deployed: the Lambda code (functions/) and the Glue job (glue_jobs/) never import it.
"""
