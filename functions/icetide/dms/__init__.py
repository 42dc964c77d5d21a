"""What icetide asks of AWS DMS, as data: filter operators, table mappings, task settings, identifiers."""
