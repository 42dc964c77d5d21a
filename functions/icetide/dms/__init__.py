"""What icetide asks of AWS DMS, as data: identifiers, table mappings, task settings, the per-run S3
target (bronze), what a task's status means, and the rules for deleting a run's DMS resources."""
