"""r2k core: domain, state machines, persistence, queues, graph and LLM adapters.

Plain Python. Nothing here imports Textual; `app` and `workers` import this package, never
the other way round (a test checks the import graph).
"""
