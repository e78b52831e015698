"""Corpus2Skill: a corpus compiled into a navigable hierarchy of skills (paper: corpus2skill.md).

`model` is the on-disk contract between the compiler (`compile`, `materialise`, `update`) and
the navigators (`navigate`): a skill folder is readable by an agent as plain files and by
bookindex through `skills.json` + `vectors.npz` + the document store.
"""
