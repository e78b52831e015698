"""Providers: the LLM client, embedders, rerankers and NLP models, each behind a core protocol."""
