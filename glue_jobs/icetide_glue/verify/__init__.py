"""Comparing silver with the source's keys: a verify run's report, and a reconcile run's deletes
of keys the source no longer holds."""
