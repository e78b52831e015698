"""Annual-report filings built at test time with reportlab (invariant=1: byte-stable output), for
the tests of one company across its names: invented companies, each filing a cover (form, fiscal
year, registrant and its caption, an optional employer identification number, the table of
registered securities) and a page of its annual report (revenue by year, an optional sentence
saying what the company was formerly known as).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reportlab.lib.pagesizes import letter
from reportlab.pdfgen import canvas

LEFT = 54


@dataclass(frozen=True)
class Filing:
    """One 10-K of an invented company: what its cover and its first page of text say."""

    registrant: str
    fiscal_year: int
    employer_id: str = ""          # printed under its caption when given
    symbol_row: tuple[str, ...] = ()  # the row under "Trading Symbol(s)"; () prints "None"
    formerly: str = ""             # "<registrant> (formerly known as <formerly>)" on the report's page
    revenue: int = 100


def build_filing(path: Path, f: Filing) -> Path:
    """A two-page 10-K: its cover, then the first page of its annual report."""
    c = canvas.Canvas(str(path), pagesize=letter, invariant=1)
    y = 740.0

    def line(text: str, size: float = 9, bold: bool = False, x: float = LEFT, gap: float = 14) -> None:
        nonlocal y
        c.setFont("Helvetica-Bold" if bold else "Helvetica", size)
        c.drawString(x, y, text)
        y -= gap

    line("UNITED STATES SECURITIES AND EXCHANGE COMMISSION", 12, True, x=150)
    line("Washington, D.C. 20549", x=250)
    line("FORM 10-K", 14, True, x=270, gap=20)
    line("ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934")
    line(f"For the fiscal year ended December 31, {f.fiscal_year}")
    line("OR")
    line("TRANSITION REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934")
    line("FOR THE TRANSITION PERIOD FROM TO")
    line("Commission File Number 001-40817", gap=20)
    line(f.registrant, 12, True, x=200)
    line("(Exact name of registrant as specified in its charter)", x=200, gap=20)
    if f.employer_id:
        c.setFont("Helvetica", 9)
        c.drawString(LEFT, y, "Delaware")
        c.drawString(350, y, f.employer_id)
        y -= 12
        c.drawString(LEFT, y, "(State or other jurisdiction of incorporation)")
        c.drawString(350, y, "(I.R.S. Employer Identification No.)")
        y -= 18
    line("400 Harbour Street, Springfield, Oregon 97477")
    line("(Address of principal executive offices) (Zip Code)", gap=20)
    line("Securities registered pursuant to Section 12(b) of the Act:")
    c.setFont("Helvetica", 9)
    for x, text in zip((LEFT, 260, 360), ("Title of each class", "Trading Symbol(s)",
                                          "Name of each exchange on which registered")):
        c.drawString(x, y, text)
    y -= 14
    for x, text in zip((LEFT, 260, 360), f.symbol_row or ("None",)):
        c.drawString(x, y, text)
    y -= 18
    line("SECURITIES REGISTERED PURSUANT TO SECTION 12(g) OF THE ACT: COMMON STOCK, NO PAR VALUE")
    for _ in range(3):
        line("Indicate by check mark whether the registrant has filed all reports required to be filed.")
    c.showPage()
    y = 740.0
    line("PART II", 12, True)
    line("Item 7. Management's Discussion and Analysis", 11, True, gap=18)
    name = f"{f.registrant} (formerly known as {f.formerly})" if f.formerly else f.registrant
    for text in (f"{name} designs and sells", f"garden equipment. Net revenue was ${f.revenue} million in",
                 f"fiscal {f.fiscal_year}, against ${f.revenue - 7} million in fiscal {f.fiscal_year - 1}.",
                 "Gross margin, operating income and cash flows are discussed below."):
        line(text, 10)
    c.showPage()
    c.save()
    return path


# three invented companies, several fiscal years each, their covers printing different legal names:
# - Larkspur: "… Systems Incorporated" renamed "… Inc."; every cover prints one employer id;
# - Aurelle Brands: formerly Brightwater Foods, as its newest report says (no employer id printed);
# - Tamsin: "Corp." then "Corporation"; the older cover's table registers no class (a word of the
#   cover's own sentences follows the "Trading Symbol(s)" caption), the newer one's a symbol.
RENAMED = {
    "larkspur-2017": Filing("LARKSPUR SYSTEMS INCORPORATED", 2017, employer_id="84-3170526", revenue=310),
    "larkspur-2018": Filing("LARKSPUR SYSTEMS INCORPORATED", 2018, employer_id="84-3170526", revenue=340),
    "larkspur-2019": Filing("LARKSPUR INC.", 2019, employer_id="84-3170526", revenue=365,
                            symbol_row=("Common Stock, $0.01 par value per share", "LKSP", "Nasdaq Global Select Market")),
    "larkspur-2020": Filing("LARKSPUR INC.", 2020, employer_id="84-3170526", revenue=390,
                            symbol_row=("Common Stock, $0.01 par value per share", "LKSP", "Nasdaq Global Select Market")),
    "brightwater-2019": Filing("BRIGHTWATER FOODS CORPORATION", 2019, revenue=120),
    "brightwater-2020": Filing("BRIGHTWATER FOODS CORPORATION", 2020, revenue=131),
    "aurelle-2021": Filing("AURELLE BRANDS, INC.", 2021, revenue=144),
    "aurelle-2022": Filing("AURELLE BRANDS, INC.", 2022, revenue=158, formerly="Brightwater Foods Corporation"),
    "tamsin-2020": Filing("TAMSIN CORP.", 2020, revenue=75),
    "tamsin-2021": Filing("TAMSIN CORPORATION", 2021, revenue=83,
                          symbol_row=("Common Stock, par value $0.001 per share", "TMSN", "New York Stock Exchange")),
}


def build_renamed_filings(folder: Path) -> dict[str, Path]:
    """Every filing of `RENAMED`, each under a file name that says nothing (`scan_NN.pdf`)."""
    folder.mkdir(parents=True, exist_ok=True)
    return {key: build_filing(folder / f"scan_{i:02d}.pdf", f) for i, (key, f) in enumerate(RENAMED.items())}
