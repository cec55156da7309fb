"""Grey entries: the unknowns a text leaves unsettled, for a specialist's triage."""
