"""Stand-ins for the AWS services moto cannot run: DMS (``dms/``) and Glue job runs (``glue``).

Each patches moto's backend of its service for a ``with`` block, so icetide's handlers and the state
machine call the ordinary AWS APIs and see what the real service would answer.
"""
