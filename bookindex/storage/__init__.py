"""Storage: the library catalog, document folders, graph and vector files, atomic writes."""
