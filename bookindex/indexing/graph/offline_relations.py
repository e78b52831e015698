"""Relations a sentence states, read from spaCy's dependency parse: subject–verb–object.

Without an LLM most relations are co-occurrences (two mentions near each other in a sentence).
Where the sentence gives a verb between two mentions, the relation is named by the verb's lemma
(with its particle and preposition: "set up", "install into"):

- subject (`nsubj`) and object (`dobj`) of a verb: "The parser reads the schema" → parser –read→
  schema; a verb without an object joins its subject to a prepositional object: "runs on
  Linux" → –run on→ (beside an object, a prepositional phrase is mostly an adjunct: none);
- passive voice: the `agent` is the subject, `nsubjpass` the object ("is read by the parser");
- a relative clause's pronoun subject is the noun it modifies ("Frobtool, which checks the
  spool" → Frobtool –check→ spool); a passive participle modifies its object ("a library written
  by Nikos" → Nikos –write→ library); a verb in a conjunction or an `xcomp` without a subject of
  its own shares its head verb's ("reads the file and builds a tree");
- an imperative (a base-form verb without any subject: "Run frobtool on the spool") joins its
  object to the prepositional objects: frobtool –run on→ spool.

Conjuncts of every argument count too ("X and Y"). Pronouns are no mentions, so "it reads X"
gives nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # spaCy is imported on first use (bookindex.providers.nlp)
    from spacy.tokens import Span, Token

MAX_PER_VERB = 6  # triples one verb may give (its arguments' cross product, conjuncts included)


@dataclass(frozen=True)
class Triple:
    """Mention `source` –`verb`→ mention `target` (mention indices of the caller)."""

    source: int
    verb: str
    target: int


def _with_conjuncts(toks: list[Token]) -> list[Token]:
    out: list[Token] = []
    for t in toks:
        for x in (t, *t.conjuncts):
            if x not in out:
                out.append(x)
    return out


def _kids(tok: Token, *deps: str) -> list[Token]:
    return [c for c in tok.children if c.dep_ in deps]


def _subjects(v: Token, depth: int = 0) -> list[Token]:
    """The verb's semantic subjects (see the module doc); `depth` bounds the inheritance."""
    if _kids(v, "nsubjpass", "auxpass"):
        return [g for a in _kids(v, "agent") for g in _kids(a, "pobj")]
    subj = _kids(v, "nsubj")
    if v.dep_ == "relcl" and (not subj or all(s.tag_ in ("WDT", "WP") for s in subj)):
        return [v.head]
    if v.dep_ == "acl":
        return [v.head] if v.tag_ == "VBG" else [g for a in _kids(v, "agent") for g in _kids(a, "pobj")]
    if not subj and v.dep_ in ("conj", "xcomp") and v.head.pos_ in ("VERB", "AUX") and depth < 2:
        return _subjects(v.head, depth + 1)
    return subj


def _objects(v: Token) -> list[Token]:
    objs = _kids(v, "dobj") + _kids(v, "nsubjpass")
    if v.dep_ == "acl" and v.tag_ == "VBN":
        objs.append(v.head)
    return objs


def _prep_objects(v: Token) -> list[tuple[str, Token]]:
    return [(p.lower_, g) for p in _kids(v, "prep") for g in _kids(p, "pobj")]


def verb_name(v: Token) -> str:
    """The verb's lemma with its particle ("set up")."""
    prt = " ".join(c.lower_ for c in _kids(v, "prt"))
    return (v.lemma_.lower() or v.lower_) + (" " + prt if prt else "")


def _imperative(v: Token) -> bool:
    """A base-form verb heading its clause with no subject of any kind ("Run frobtool on ...")."""
    return v.tag_ == "VB" and v.dep_ in ("ROOT", "conj") and not _kids(v, "nsubj", "nsubjpass", "aux", "auxpass")


def verb_triples(sent: Span, mention_of: Callable[[Token], int | None]) -> list[Triple]:
    """Every verb of `sent` whose arguments are mentions (`mention_of(token)`: the index of the
    mention the token heads or lies in, or None), as triples: subject –verb→ object; without an
    object, subject –verb prep→ prepositional object; an imperative's object –verb prep→
    prepositional object. (A prepositional phrase beside an object is mostly an adjunct.)"""
    out: list[Triple] = []
    for v in sent:
        if v.pos_ != "VERB" or not v.is_alpha:
            continue
        name = verb_name(v)
        subj = [m for m in map(mention_of, _with_conjuncts(_subjects(v))) if m is not None]
        obj = [m for m in map(mention_of, _with_conjuncts(_objects(v))) if m is not None]
        preps = [(p, m) for p, t in _prep_objects(v) for m in map(mention_of, _with_conjuncts([t])) if m is not None]
        if subj and obj:
            found = [Triple(s, name, o) for s in subj for o in obj]
        elif subj:
            found = [Triple(s, f"{name} {p}", o) for s in subj for p, o in preps]
        elif obj and _imperative(v):
            found = [Triple(o, f"{name} {p}", po) for o in obj for p, po in preps]
        else:
            found = []
        out += [t for t in found if t.source != t.target][:MAX_PER_VERB]
    return out
