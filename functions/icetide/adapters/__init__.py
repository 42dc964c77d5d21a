"""boto3 behind small adapters, one per AWS service icetide drives.

Only this package imports boto3. Clients are created on first use (see :mod:`.clients`), so
moto's ``mock_aws`` intercepts them in tests and the local stack.
"""
