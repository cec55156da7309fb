"""Work items and the generation job that answers them (retrieval plus the LLM or the extractive generator), and the LLM's refinement of candidates."""
