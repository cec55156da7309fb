"""Users, their roles and keys, and API tokens."""
