"""Services: one package per workflow (docs/architecture.md, "Layout"); the functions the TUI, the CLI
and the workers all call. The modules left here are the shared kernel (common, unit_of_work, jobs) and
the front ends' kit (session, bulk).

Each mutating call is one unit of work (one transaction, `unit_of_work.in_unit_of_work`) and accepts an
idempotency key. Workflows do not call each other for what follows a move: the reactions table
does (core/reactions.py, docs/architecture.md "Reactions").
"""
