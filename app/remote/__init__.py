"""Remote access (docs/architecture.md, "Remote access"): the workstation served over SSH (`ssh.py`,
each session the TUI in a process of its own, `session.py`) and in a browser (`web.py`).
Nothing here is imported unless `r2k serve …` or `r2k services status` asks for it."""
