"""Conflict flags between answers, and the graph kept up with the registry."""
