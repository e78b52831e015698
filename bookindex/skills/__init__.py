"""Corpus2Skill: a corpus compiled into a navigable hierarchy of skills (paper: corpus2skill.md).

Two halves that never import each other, and the contract between them:
- `compiler`: a corpus (files, folders or bookindex libraries) into a skill folder: clusters,
  summaries, SKILL.md / INDEX.md, incremental add/remove, and the library hierarchy whose leaves
  hold each document's own skill;
- `navigator`: questions to a skill folder: the embedding beam, the flat baselines, the LLM agent
  and its tools, and the library-hierarchy walk down to a document's blocks;
- `model`: the on-disk contract (skills.json, vectors.npz, documents.json, hierarchy.json), so a
  skill folder is readable by an agent as plain files and by bookindex as data.

Routing a question to a library's documents is not here: `bookindex.routing`.
"""
