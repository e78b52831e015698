"""Storage: the library catalog, generation folders, atomic commits, the writer lock, reader leases,
content hashing, S3 sync and the vector backends. It never imports bookindex.indexing."""
