"""The CLI commands' handlers, one module per top-level command, imported when its command runs (docs/architecture.md, "Command line")."""
