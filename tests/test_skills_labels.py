"""No-LLM cluster labels and summaries: spaCy noun phrases ranked by class-based TF-IDF, kept for a
label only when most members use their words and the rest of the corpus does not (real spaCy model)."""

from __future__ import annotations

from bookindex.skills.compiler.keyphrases import KeyPhrases
from bookindex.skills.compiler.summarise import ClusterInput, ExtractiveSummariser
from bookindex.skills.model import CorpusDocument


def doc(i: str, title: str, text: str) -> CorpusDocument:
    return CorpusDocument(id=i, title=title, text=text)


WIX = "your Wix site"


DOMAINS = [
    doc("d1", "Connecting a Custom Domain", f"Connect your custom domain name to {WIX}. Update the DNS records at your registrar."),
    doc("d2", "Transferring a Custom Domain", "Transfer a custom domain name to Wix. Unlock the domain name at the registrar."),
    doc("d3", "Custom Domain Not Working", f"If your custom domain name does not load {WIX}, check the DNS records and wait 48 hours."),
    doc("d4", "Renewing Your Domain", "Renew the custom domain name before it expires so your Wix site stays online."),
    doc("d5", "Coupon Codes Not Applying", "A coupon code may not apply at checkout when the Wix coupon expired."),
]
PAYMENTS = [
    doc("p1", "Wix Payments: Refunding a Customer", "Issue a refund to a customer who paid with a credit card through Wix Payments."),
    doc("p2", "Wix Payments: Payout Schedule", "Wix Payments sends your payouts to your bank account on a weekly payout schedule."),
    doc("p3", "Wix Payments: Verifying Your Identity", "Verify your identity before Wix Payments releases payouts to your bank account."),
    doc("p4", "Wix Payments: Chargebacks", "A customer may dispute a credit card payment; Wix Payments notifies you of the chargeback."),
]
BOOKINGS = [
    doc("b1", "Wix Bookings: Adding Staff", "Add staff members to Wix Bookings so clients can book sessions with them."),
    doc("b2", "Wix Bookings: Booking Forms", "Customize the booking form clients fill in when they book a session."),
    doc("b3", "Wix Bookings: Working Hours", "Set the working hours of your staff so clients book sessions only when staff are available."),
]
CORPUS = DOMAINS + PAYMENTS + BOOKINGS


def covered(label: str, members: list[CorpusDocument]) -> float:
    words = label.split()
    return sum(all(w in f"{d.title} {d.text}".lower() for w in words) for d in members) / len(members)


def test_labels_are_phrases_most_members_share():
    kp = KeyPhrases(CORPUS)
    for members in (DOMAINS, PAYMENTS, BOOKINGS):
        label = kp.label(members)
        assert label and covered(label, members) > 0.5, label
    assert kp.label(DOMAINS).startswith("custom domain")  # a multi-word noun phrase ("name" is a spaCy stop word)
    assert "wix payment" in kp.label(PAYMENTS)          # "Wix Payments" (a proper noun) folded to the singular
    assert "booking" in kp.label(BOOKINGS).split()      # "Bookings" and "booking" are one word


def test_a_phrase_of_one_member_or_of_every_document_is_not_a_label():
    kp = KeyPhrases(CORPUS)
    assert "coupon" not in kp.label(DOMAINS)  # one member's topic: not what the cluster is about
    assert "coupon code" not in kp.key_phrases(DOMAINS, 8)
    # every document says "Wix": alone it tells no cluster apart
    assert all(kp.label(m) != "wix" and "wix" not in kp.key_phrases(m, 8) for m in (DOMAINS, PAYMENTS, BOOKINGS))


def test_extractive_summary_names_phrases_and_central_titles_without_counts():
    s = ExtractiveSummariser(CORPUS).one(ClusterInput(level=1, num_documents=5, documents=DOMAINS))
    assert s.label.startswith("custom domain")
    assert s.overview.startswith("Documents on custom domain") and "Connecting a Custom Domain" in s.overview
    assert not any(ch.isdigit() for ch in s.line())  # counts are rendered from the membership, not written here
