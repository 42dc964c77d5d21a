"""The merge of a run's changes into silver on Spark: the choice of engine (plan), the
classification SQL rendered from the decision table (icetide_glue.decision), its planned read of
silver, and its commit (apply, position deletes)."""
