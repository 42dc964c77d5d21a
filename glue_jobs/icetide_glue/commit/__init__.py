"""What a run leaves besides silver's rows: its snapshot summary and commit found again by run id,
the run ledger, the manifest, appends that land once, and data files written before a commit."""
