"""Document routing: which documents of a library a question goes to, without an LLM.

`router` ranks whole documents by four fused signals (`LibraryRouter`, built by `router_for` over
any `core.protocols.DocumentIndex`), `names` is its sparse name signal, `pooled` searches every
block of a library as one collection, and `document_text` reads a document as one text and one
vector the way the skills compiler does. Every `ask` without a document is routed here; the
skills navigators use the same router at the documents a hierarchy reaches.
"""
