"""Pure text logic, no I/O (docs/architecture.md, "Layout"): the ranking maths of retrieval among it."""
