"""The skills compiler: a corpus into a skill folder (paper §3.2), and a library into one hierarchy.

`corpus` loads documents (files, JSONL, libraries), `cluster` + `compile` build the tree level by
level, `summarise` labels it (LLM or extractive), `materialise` writes the folder whole and swaps it
in, `build` runs it all, `update` adds and removes documents in place; `docskill` + `docsummary`
render one indexed document's section tree as a skill and `hierarchy` hangs those under the topic
clusters (`skills build --documents`); `requests` holds the typed requests and reports, `treeview`
the tree as a UI shows it. Everything written follows `skills.model`.
"""
