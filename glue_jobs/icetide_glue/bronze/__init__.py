"""Bronze: reading a run's DMS change files with Spark, the whole folder or a bronze file
selection's files, in DMS's file order."""
