"""Knowledge-graph construction: entity extraction (LLM or offline) and gradient-based entity resolution."""
