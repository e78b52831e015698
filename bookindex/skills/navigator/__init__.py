"""The skills navigators: questions to a compiled skill folder, read through `skills.model`.

Without an LLM: `beam` (the embedding beam down the clusters), `flat` (BM25 / dense / hybrid /
RAPTOR-style baselines), `libnav` (a library hierarchy: beam, then the router, then a document's
search, section and block). With an LLM: `agent` (the tool-calling navigator), `guide` (the
embedding order it is shown), `context_fit` (its prompt budget). Its tools: `folder_tools` (`view`,
`get_document` over the folder), `document_tools` (`search_document`, `get_node`, `get_pages` at a
library's documents, through `access.DocumentAccess`), `tool_registry` (each tool declared once
and dispatched), `tool_result` (what a call returns). `navigate` is the entry point, `opened` a
folder opened once, `answer` the typed request and answer, `pages` the page-range reader.
"""
