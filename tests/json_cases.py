"""Broken JSON as language models write it, with the value each reply meant.

Shared by tests/test_jsonfix.py and scripts/bench_json_repair.py (which compares the hand-written
scanner, the json-repair library and the wrapper on the same cases). Each case: (id, raw, intended).
"""

from __future__ import annotations

from typing import Any

ADA = {"name": "Ada", "age": 36}

# The cases of tests/test_llm_client.py::test_extract_json, repeated here so the comparison covers them.
CLIENT_CASES: list[tuple[str, str, Any]] = [
    ("plain", '{"name": "Ada", "age": 36}', ADA),
    ("fence-json", '```json\n{"name": "Ada", "age": 36}\n```', ADA),
    ("prose-both-sides-with-braces", 'Sure! Here it is: {"name": "Ada", "age": 36} Let me know {if} more.', ADA),
    ("truncated-string", '{"name": "Ada", "age": 36, "note": "cut here', {**ADA, "note": "cut here"}),
    ("truncated-nested-array", '{"name": "Ada", "age": 36, "tags": ["a", "b', {**ADA, "tags": ["a", "b"]}),
    ("truncated-array-dangling-key", '[{"x": 1}, {"x": 2}, {"x"', [{"x": 1}, {"x": 2}]),
    ("brace-and-quote-in-string", '{"s": "brace } and \\" quote"}', {"s": 'brace } and " quote'}),
    ("prose-placeholders-first", 'Use {placeholders} like [this]; answer: {"name": "Ada", "age": 36}', ADA),
]

EXTRACTION = {
    "nodes": [
        {"node": "N1",
         "entities": [{"name": "asn1_der_coding", "type": "function", "description": "encodes a structure in DER"},
                      {"name": "DER", "type": "encoding", "description": "distinguished encoding rules"}],
         "relations": [{"source": "asn1_der_coding", "target": "DER", "description": "produces",
                        "keywords": ["encode", "der"], "weight": 0.9}]},
    ]
}

LLM_CASES: list[tuple[str, str, Any]] = [
    ("fence-no-language", '```\n{"category": "single-hop"}\n```', {"category": "single-hop"}),
    ("fence-then-explanation",
     'Here is the classification:\n\n```json\n{"category": "global"}\n```\n\nThe question asks about all tables.',
     {"category": "global"}),
    ("prose-before-no-fence", 'The answer is: {"answer": "It sets the x range [1]."}',
     {"answer": "It sets the x range [1]."}),
    ("json-word-prefix", 'json\n{"sections": [3, 7, 12]}', {"sections": [3, 7, 12]}),
    ("trailing-comma-object", '{"filter_type": "table", "filter_value": null,}',
     {"filter_type": "table", "filter_value": None}),
    ("trailing-comma-array", '{"sections": [4, 9, 2,]}', {"sections": [4, 9, 2]}),
    ("trailing-commas-nested",
     '{"filters": [{"filter_type": "section", "filter_value": "3.2",},], "operation": "COUNT",}',
     {"filters": [{"filter_type": "section", "filter_value": "3.2"}], "operation": "COUNT"}),
    ("single-quotes", "{'name': 'Ada', 'age': 36}", ADA),
    ("single-quotes-apostrophe-in-double", "{'answer': \"Ada's age is 36 [2]\"}", {"answer": "Ada's age is 36 [2]"}),
    ("python-literals", '{"match": True, "index": None, "merge": False}', {"match": True, "index": None, "merge": False}),
    ("python-dict-repr", "{'category': 'multi-hop', 'confident': True}", {"category": "multi-hop", "confident": True}),
    ("line-comments", '{\n  "sections": [2, 5], // the install chapters\n  "reason": "setup"\n}',
     {"sections": [2, 5], "reason": "setup"}),
    ("block-comment", '{"category": /* guessed */ "simple"}', {"category": "simple"}),
    ("newline-in-string", '{"answer": "First line.\nSecond line [1]."}', {"answer": "First line.\nSecond line [1]."}),
    ("tab-in-string", '{"answer": "a\tb"}', {"answer": "a\tb"}),
    ("truncated-after-colon", '{"sub_questions": [{"question": "What is DER?", "type": "retrieval"}, {"question":',
     {"sub_questions": [{"question": "What is DER?", "type": "retrieval"}]}),
    ("truncated-in-number", '{"index": 3, "score": 0.8', {"index": 3, "score": 0.8}),
    ("fence-comma-and-comment", '```json\n{\n  "sections": [1, 2,], // best first\n}\n```', {"sections": [1, 2]}),
    ("truncated-extraction-mid-relation",
     '{"nodes": [{"node": "N1", "entities": [{"name": "asn1_der_coding", "type": "function", "description": '
     '"encodes a structure in DER"}, {"name": "DER", "type": "encoding", "description": "distinguished encoding '
     'rules"}], "relations": [{"source": "asn1_der_coding", "target": "DER", "description": "produces", '
     '"keywords": ["encode", "der"], "weight": 0.9}, {"source": "DER", "targ',
     EXTRACTION),
    ("two-objects-newline", '{"category": "single-hop"}\n{"category": "global"}', {"category": "single-hop"}),
    ("two-objects-adjacent", '{"answer": "a"}{"answer": "b"}', {"answer": "a"}),
    ("two-fences-first-wins",
     '```json\n{"sections": [1]}\n```\nor, if you prefer:\n```json\n{"sections": [1, 2]}\n```', {"sections": [1]}),
    ("nested-schema-fenced-pretty", "```json\n" + """{
  "nodes": [
    {
      "node": "N1",
      "entities": [
        {"name": "asn1_der_coding", "type": "function", "description": "encodes a structure in DER"},
        {"name": "DER", "type": "encoding", "description": "distinguished encoding rules"}
      ],
      "relations": [
        {"source": "asn1_der_coding", "target": "DER", "description": "produces", "keywords": ["encode", "der"], "weight": 0.9}
      ]
    }
  ]
}""" + "\n```", EXTRACTION),
    ("think-block-with-braces", '<think>The schema wants {"category": ...}; this is one fact.</think>\n'
     '{"category": "single-hop"}', {"category": "single-hop"}),
    ("unquoted-keys", '{category: "global", operation: "LIST"}', {"category": "global", "operation": "LIST"}),
    ("missing-comma", '{"name": "Ada" "age": 36}', ADA),
    ("smart-quotes", '{\u201cname\u201d: \u201cAda\u201d, \u201cage\u201d: 36}', ADA),
    ("unicode-escapes", '{"name": "Ad\\u00e9la", "age": 36}', {"name": "Ad\u00e9la", "age": 36}),
    ("top-level-array-trailing-prose", '[{"name": "DER", "type": "encoding"}]\n\nThese are the key entities.',
     [{"name": "DER", "type": "encoding"}]),
]

# Written after the wrapper had been tuned on the cases above, then run once as they stand: the
# held-out check on overfitting (docs/benchmarks.md reports their scores separately).
HELD_OUT: list[tuple[str, str, Any]] = [
    ("brackets-in-string", '{"answer": "The `set xrange [0:10]` command sets it [1]."}',
     {"answer": "The `set xrange [0:10]` command sets it [1]."}),
    ("prose-then-trailing-comma", 'Answer:\n{\n  "category": "multi-hop",\n}\n', {"category": "multi-hop"}),
    ("fence-uppercase-language", '```JSON\n{"sections": [1, 2]}\n```', {"sections": [1, 2]}),
    ("escaped-quotes-valid", '{"answer": "He said \\"hi\\"", "ok": true}', {"answer": 'He said "hi"', "ok": True}),
    ("top-level-trailing-comma",
     '{"entities": [{"name": "gnuplot", "type": "software"}, {"name": "pm3d", "type": "mode"}],}',
     {"entities": [{"name": "gnuplot", "type": "software"}, {"name": "pm3d", "type": "mode"}]}),
    ("two-objects-with-prose", 'I think the answer is {"answer": "42 [3]"}. Hope it helps! {"extra": 1}',
     {"answer": "42 [3]"}),
    ("mixed-quotes", "{'sub_questions': [{'question': \"What is the DER of X?\", 'type': 'retrieval'}]}",
     {"sub_questions": [{"question": "What is the DER of X?", "type": "retrieval"}]}),
    ("trailing-comment-after-object", '{"index": -1} // none of the candidates match', {"index": -1}),
    ("think-then-fence", '<think>\nLet me list [sections].\n</think>\n```json\n{"sections": [5]}\n```',
     {"sections": [5]}),
    ("truncated-string-in-record",
     '{"nodes": [{"node": "N2", "entities": [], "relations": []}, {"node": "N3", "entities": [{"name": "splot", '
     '"type": "command", "description": "draws surfaces',
     {"nodes": [{"node": "N2", "entities": [], "relations": []},
                {"node": "N3", "entities": [{"name": "splot", "type": "command", "description": "draws surfaces"}]}]}),
    ("top-level-array-trailing-comma",
     '[\n  {"name": "fit", "type": "command"},\n  {"name": "stats", "type": "command"},\n]',
     [{"name": "fit", "type": "command"}, {"name": "stats", "type": "command"}]),
    ("prose-braces-after", '{"category": "global"}\n\nNote: I chose global because it asks about {all} tables.',
     {"category": "global"}),
]

ALL_CASES = CLIENT_CASES + LLM_CASES + HELD_OUT
NO_JSON = ["I cannot help with that.", "", "Sorry, the fragment has no entities."]
