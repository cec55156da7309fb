"""The r2k.testing pytest plugin (docs/architecture.md, "HTTP API")."""
