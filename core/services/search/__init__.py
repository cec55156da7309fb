"""Retrieval: passages found by their words and their meaning, the embeddings index, the extractive generator's sentences and grounding."""
