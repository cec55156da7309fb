"""Services: one module per workflow; the functions the TUI, the CLI and the workers all call.

Each mutating call is one unit of work (one transaction, `unit_of_work.in_unit_of_work`) and accepts an
idempotency key. Workflows do not call each other for what follows a move: the reactions table
does (core/reactions.py, docs/architecture.md "Reactions").
"""
