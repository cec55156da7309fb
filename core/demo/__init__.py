"""The demo corpus and users, shipped as data; loaded by core/services/operations/demo.py."""
