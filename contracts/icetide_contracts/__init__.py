"""The contracts between icetide's Lambdas and its Glue job: one typed model per boundary.

- `run_plan.RunPlan`: what one run does, fixed at lock time; built by the Lambda acquire_lock,
  carried by the state machine (some fields become the Glue job's arguments), read by later handlers.
- `run_manifest.RunManifest`: what the Glue job did; written by Glue, read by commit_watermark.
- `watermark_text`: how a watermark is spelt as JSON (timestamps, exact decimals), by both sides.

Both sides import this package: the Lambdas from a layer (`ContractsLayer`, ContentUri contracts/),
the Glue job from the zip of its `--extra-py-files` (the Glue code publisher adds it there). So it
uses the standard library only: Glue 5.1 provides no pydantic we may rely on.
"""
