"""RQ entry points: thin calls into core.services (DESIGN §7)."""
