"""bookindex: retrieval layer."""
