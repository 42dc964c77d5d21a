"""A table run's lifecycle, from the schedule event to the commit or the recorded failure.

Scheduling (which tables a schedule event starts), the table lock, the run plan fixed at lock time
(`icetide.run.plan.build_run_plan`), the handlers' typed inputs, reading the run manifest the Glue
job writes (`icetide.run.manifest.read_manifest`), the commit of the watermark, and a failure's cause.
The plan and the manifest themselves are contracts with the Glue job: `icetide_contracts`.
"""
