"""Ingesting source documents into sections, passages and candidates."""
