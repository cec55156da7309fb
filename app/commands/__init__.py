"""CLI command groups; each module's `register(commands)` adds its subcommands (docs/architecture.md, Command line)."""
