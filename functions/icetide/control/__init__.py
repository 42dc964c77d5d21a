"""The control item: one DynamoDB item per table and everything about its values.

Its model and the problems it reports, its scalar values and watermark values, the filter operators
it may name (DMS's source-filter operators, which `icetide.dms` maps), conflicts between items, and
its DynamoDB typed-JSON codec. Nothing here knows about runs or DMS resources.
"""
