"""CLI command groups; each module's `register(commands)` adds its subcommands (DESIGN §10)."""
