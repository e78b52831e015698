"""Contract suites: one per protocol of `bookindex.core.protocols`, in the style of Haystack's
`testing/document_store.py`.

A contract module (`llm.py`, `embedder.py`, ...) holds a base class `XContract` with the tests
and abstract fixtures; `test_*.py` subclass it once per implementation, overriding the fixtures
that build that implementation. A new backend passes the contract by adding one subclass.
"""
