"""Validation: the candidate, its decisions (approve, revise, reject, escalate), overlap review and guidelines, and comments."""
