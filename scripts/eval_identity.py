#!/usr/bin/env python
"""Document identity against the FinanceBench file names: is each filing's company, form and
fiscal year read right from its own pages?

    python scripts/eval_identity.py ../shared/data/financebench-dev [--cache /tmp/id-blocks]

FinanceBench names its filings `COMPANY_YEAR_FORM[...].pdf` (`BESTBUY_2024Q2_10Q.pdf`,
`MGMRESORTS_2023_8K_dated-2023-03-01.pdf`); the name is used here as the gold answer only, never
as input (`parsing.identity` reads the parsed pages). Checks, per filing (documents/ and
distractors/):
- company: the gold company's letters are the start of the organisation's letters, or of the
  cover's title when there is no organisation, or equal its ticker or its initials (AMD);
- form: 10K / 10Q / 8K against the form (earnings releases and annual reports have none);
- year: the gold year is one of the years the router matches (`DocumentIdentity.years()`); for an
  8-K, which reports an event and no fiscal period, the year of its date of report.
- organisation: the router's organisations (`identity_match.organisation_groups`: names alike but
  for legal form, former names, one employer id) against the gold companies: a company whose
  filings fall in more than one organisation is split, an organisation holding filings of more
  than one company merges them.
Prints one line per filing, a table of the wrong or missing fields and the split or merged
companies; exit 0.
"""

from __future__ import annotations

import argparse
import pickle
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookindex.core.config import load_settings  # noqa: E402
from bookindex.core.model import Block  # noqa: E402
from bookindex.parsing.dispatch import parse_file  # noqa: E402
from bookindex.parsing.identity import DocumentIdentity, identify  # noqa: E402
from bookindex.routing.identity_match import organisation_groups  # noqa: E402

GOLD = re.compile(r"^(?P<company>[A-Z0-9]+)_(?P<year>\d{4})(?:Q\d)?_(?P<form>[A-Za-z0-9]+)")
FIRST_PAGES = 12  # of a parse kept in the cache: identity reads no further


def blocks_of(pdf: Path, cache: Path | None) -> list[Block]:
    """The first pages' blocks of `pdf`, parsed (or read back from `cache`)."""
    cached = cache / f"{pdf.name}.pkl" if cache else None
    if cached and cached.is_file():
        return pickle.loads(cached.read_bytes())
    settings = load_settings(overrides={"llm.provider": "none"}, env={})
    with tempfile.TemporaryDirectory() as work:
        parsed = parse_file(pdf, settings, image_dir=Path(work) / "img", work_dir=Path(work) / "parse")
    pages = sorted({b.page_idx for b in parsed.blocks if b.content.strip()})[:FIRST_PAGES]
    blocks = [b for b in parsed.blocks if b.page_idx in pages]
    if cached:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_bytes(pickle.dumps(blocks))
    return blocks


def letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def check(name: str, ident: DocumentIdentity) -> dict[str, str]:
    """The wrong or missing fields of `ident` against the gold in `name` (field -> what was read)."""
    gold = GOLD.match(name)
    if not gold:
        return {}
    wrong: dict[str, str] = {}
    company = letters(gold["company"])
    said = letters(ident.organisation or ident.title)
    initials = "".join(w[0] for w in re.findall(r"[a-z0-9]+", (ident.organisation or "").lower()))
    if not (said.startswith(company) or company in (letters(ident.ticker), initials[:len(company)])):
        wrong["company"] = ident.organisation or f"(title) {ident.title[:40]}"
    form = gold["form"].upper()
    if form in ("10K", "10Q", "8K") and letters(ident.form) != form.lower():
        wrong["form"] = ident.form or "(none)"
    years = {int(ident.date[:4])} if form == "8K" and ident.date[:4].isdigit() else ident.years()
    if int(gold["year"]) not in years:
        wrong["year"] = ",".join(str(y) for y in sorted(years)) or "(none)"
    return wrong


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path, help="FinanceBench split folder (documents/, distractors/)")
    ap.add_argument("--cache", type=Path, help="folder keeping each PDF's first parsed pages between runs")
    args = ap.parse_args(argv)
    pdfs = sorted(p for sub in ("documents", "distractors") for p in (args.data / sub).glob("*.pdf"))
    if not pdfs:
        print(f"error: {args.data}: no documents/*.pdf or distractors/*.pdf", file=sys.stderr)
        return 2
    rows = []
    idents = []
    for pdf in pdfs:
        ident = identify(blocks_of(pdf, args.cache))
        idents.append(ident)
        wrong = check(pdf.name, ident)
        rows.append((pdf.name, wrong))
        print(f"{'ok   ' if not wrong else 'WRONG'} {pdf.name}: {ident.summary()} "
              f"[{ident.period or '-'}, ticker {ident.ticker or '-'}, years {sorted(ident.years())}, "
              f"employer id {ident.employer_id or '-'}, formerly {list(ident.aliases) or '-'}]", flush=True)
    print("\n| filing | field | read |\n|---|---|---|")
    for name, wrong in rows:
        for field, got in wrong.items():
            print(f"| {name} | {field} | {got} |")
    counts = {f: sum(1 for _, w in rows if f in w) for f in ("company", "form", "year")}
    print(f"\n{len(rows)} filings; wrong or missing: " + ", ".join(f"{f} {n}" for f, n in counts.items()))
    print(organisations([p.name for p in pdfs], idents))
    return 0


def organisations(names: list[str], idents: list[DocumentIdentity]) -> str:
    """The gold companies the router's organisations split or merge, as one paragraph."""
    groups = organisation_groups(idents)
    company = [m["company"] if (m := GOLD.match(n)) else n for n in names]
    by_company: dict[str, set[int]] = {}
    by_group: dict[int, set[str]] = {}
    for c, g in zip(company, groups):
        by_company.setdefault(c, set()).add(g)
        by_group.setdefault(g, set()).add(c)
    split = sorted(c for c, gs in by_company.items() if len(gs) > 1)
    merged = sorted("+".join(sorted(cs)) for cs in by_group.values() if len(cs) > 1)
    return (f"{len(by_company)} companies in {len(by_group)} organisations; "
            f"split: {', '.join(split) or 'none'}; merged: {', '.join(merged) or 'none'}")


if __name__ == "__main__":
    sys.exit(main())
