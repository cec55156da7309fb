"""The demo corpus and users, shipped as data; loaded by core/services/demo.py."""
