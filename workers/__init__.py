"""RQ entry points: thin calls into core.services."""
