"""Pure text logic, no I/O (docs/architecture.md, "Documents and extraction"): readers that parse a
file's bytes into one structure (sections with heading paths, typed blocks), and the rules that turn
blocks into candidates: one claim each, its question, its Horn type.

Nothing here reaches a database, Redis, a file or the network: `.importlinter` forbids it the
services, adapters, embedded servers and the context.
"""
