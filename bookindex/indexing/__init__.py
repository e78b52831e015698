"""Indexing: turning a parsed document into a BookIndex (tree, vectors, knowledge graph, GT-links).

It owns the document folder format (document_folder), the build pipeline (construction,
build_job), the library of indexed documents (library.DocumentLibrary) and parallel builds
(parallel); it stores through bookindex.storage."""
