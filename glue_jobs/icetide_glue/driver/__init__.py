"""The driver path: a small merge carried out in the driver's process with pyarrow and Iceberg's
Java API, without a Spark job, to the same answers and commit as the Spark path."""
