"""The services the Engine is a facade over, each built from protocols and stores, never from the Engine.

- `providers.ProviderSet`: the models (LLM, VLM, embedder, reranker), created on first use and shared;
- `documents.DocumentCache`: the one cache of opened documents (query contexts and browsed trees);
- `routing.RoutingService`: which document a question goes to (the library router, a hierarchy, the LLM navigator);
- `skills.SkillsService`: compiled skill folders (build, add, remove, view, navigate);
- `graph_queries.GraphQueries`: entity searches and neighbourhoods of a document's knowledge graph;
- `library_access.LibraryDocuments`: what a navigator may call at a library's documents;
- `stats`: tree and graph statistics of a document and of a library.
"""
