"""The MCP server through the SDK's own client, over stdio and over streamable HTTP (with the
REST server's keys), against the session's real libtasn1 library: every tool and the tree
resource."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx
import pytest

pytest.importorskip("mcp", reason="the mcp SDK (>=2,<3) is not installed")

from conftest import free_port  # noqa: E402
from mcp import Client, MCPError, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.types import INVALID_PARAMS  # noqa: E402
from server_helpers import cli_env, cli_server  # noqa: E402
from skills_helpers import build_skill_folder  # noqa: E402

from bookindex.core.config import Settings  # noqa: E402
from bookindex.engine import Engine  # noqa: E402
from bookindex.mcp_server import build_server  # noqa: E402

pytestmark = pytest.mark.slow

TOOLS = {"list_documents", "get_structure", "get_node", "get_pages", "search", "ask", "plan"}
SKILL_TOOLS = {"list_skills", "view", "get_document", "skills_search"}
KEY = "mcp-test-key"


async def exercise(client: Client, skills: bool = False) -> dict[str, object]:
    """List the tools, call each once, read the tree resource; return what came back."""
    tools = await client.list_tools()
    names = {t.name for t in tools.tools}
    assert names == (TOOLS | SKILL_TOOLS if skills else TOOLS)
    assert all(len(t.description or "") > 80 for t in tools.tools)  # written for an agent
    out: dict[str, object] = {}

    async def call(name: str, args: dict[str, object]) -> Any:
        """The tool's value: its structured content (`{"result": ...}` for lists and strings)."""
        r = await client.call_tool(name, args)
        assert not r.is_error, (name, r.content)
        sc = r.structured_content
        value = sc["result"] if isinstance(sc, dict) and set(sc) == {"result"} else sc
        out[name] = value
        return value

    docs = await call("list_documents", {})
    doc = docs[0]["doc_id"]
    outline = await call("get_structure", {"doc": "libtasn1.pdf", "depth": 1})
    assert "Function reference" in outline and f"({doc}-" in outline
    node_id = outline.splitlines()[1].rsplit("(", 1)[1].split(")")[0]
    node = await call("get_node", {"node_id": node_id})
    assert node["id"] == node_id and node["page"] >= 1
    pages = await call("get_pages", {"doc": doc, "pages": "4-5"})
    assert "--- page 4 ---" in pages and "--- page 5 ---" in pages and f"[{doc}-" in pages
    hits = await call("search", {"query": "decode a DER encoded tag", "k": 3})
    assert 0 < len(hits) <= 3 and hits[0]["node_id"].startswith(doc) and hits[0]["text"]
    answer = await call("ask", {"question": "Which function decodes a DER tag?", "doc": doc})
    assert answer["answer"] and answer["evidence"]
    plan = await call("plan", {"question": "Which function decodes a DER tag?"})
    assert plan["steps"]

    bad = await client.call_tool("get_node", {"node_id": "../../etc/passwd"})
    assert bad.is_error and "invalid node id" in "".join(getattr(c, "text", "") for c in bad.content)
    bad = await client.call_tool("get_pages", {"doc": doc, "pages": "1-99"})
    assert bad.is_error
    await refuses_unknown_arguments(client, doc)

    templates = await client.list_resource_templates()
    assert any("{doc}/tree" in t.uri_template for t in templates.resource_templates)
    res = await client.read_resource(f"bookindex://documents/{doc}/tree")
    assert "Function reference" in res.contents[0].text
    await missing_resource_is_a_clean_error(client)
    if skills:
        listed = await call("list_skills", {})
        assert listed[0]["name"] == "recipes" and listed[0]["documents"] == 8
        top = await call("view", {"path": ""})
        assert "skill-02-space/" in top
        leaf = await call("view", {"path": "skill-02-space/group-00-rockets", "skill": "recipes"})
        assert "`d5`" in leaf
        assert (await call("get_document", {"doc_id": "d5"})).startswith("[d5] Saturn V rocket")
        ranked = await call("skills_search", {"query": "rocket engine launch", "k": 2})
        assert len(ranked) == 2 and all(r["doc_id"] in {"d5", "d6", "d7", "d8"} for r in ranked)
        bad = await client.call_tool("view", {"path": "../.."})
        assert bad.is_error
    return out


def error_text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def refuses_unknown_arguments(client: Client, doc: str) -> None:
    """An argument a tool does not declare is a tool error naming it (REST answers 422 for an
    extra field), whether alone or beside valid ones; the schemas say so."""
    r = await client.call_tool("list_documents", {"bogus": 1})
    assert r.is_error and "unknown argument 'bogus'" in error_text(r) and "takes library" in error_text(r)
    r = await client.call_tool("search", {"query": "decode a DER tag", "doc": doc, "kk": 3, "qeury": "x"})
    assert r.is_error and "unknown arguments 'kk', 'qeury'" in error_text(r), error_text(r)
    assert "search takes query, doc, k, library" in error_text(r)
    tools = (await client.list_tools()).tools
    assert all(t.input_schema.get("additionalProperties") is False for t in tools)


async def missing_resource_is_a_clean_error(client: Client) -> None:
    """A document that does not exist: a protocol error (invalid params) with REST's detail,
    not the SDK's generic 'Error creating resource' (a crash, logged with its traceback)."""
    with pytest.raises(MCPError) as caught:
        await client.read_resource("bookindex://documents/nosuch.pdf/tree")
    assert caught.value.code == INVALID_PARAMS
    assert "no document 'nosuch.pdf'" in caught.value.message


@pytest.fixture(scope="module")
def skill_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hand-built skill folder, embedded with the real default embedder the server uses."""
    return build_skill_folder(tmp_path_factory.mktemp("skills") / "recipes", Engine(None, Settings()).providers.embedder)


def stdio_client_of(lib: Path, cache: Path, cwd: Path, errlog: TextIO, *args: str) -> Client:
    """A client of `bookindex mcp LIB ARGS` over stdio, the server's stderr going to `errlog`."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "bookindex.cli.app", "mcp", str(lib), *args],
                                   env=cli_env(cache), cwd=str(cwd))
    return Client(stdio_client(params, errlog=errlog))


def test_mcp_over_stdio(libtasn1_library: tuple[Path, Path], tmp_path: Path, skill_folder: Path) -> None:
    """Every tool and resource, refusals included (search and ask among them), and at the default
    verbosity not one byte on the server's stderr: an agent shows it to its user."""
    lib, cache = libtasn1_library

    async def main() -> None:
        with anyio.fail_after(240), open(tmp_path / "stderr.txt", "w") as errlog:
            async with stdio_client_of(lib, cache, tmp_path, errlog, "--skills", str(skill_folder)) as client:
                await exercise(client, skills=True)

    anyio.run(main)
    assert (tmp_path / "stderr.txt").read_text() == ""


def test_mcp_verbose_logs_refusals(libtasn1_library: tuple[Path, Path], tmp_path: Path) -> None:
    """`--verbose` is the way to see what the server refused: the INFO lines come back."""
    lib, cache = libtasn1_library

    async def main() -> None:
        with anyio.fail_after(120), open(tmp_path / "stderr.txt", "w") as errlog:
            async with stdio_client_of(lib, cache, tmp_path, errlog, "--verbose") as client:
                assert (await client.call_tool("list_documents", {"bogus": 1})).is_error
                with pytest.raises(MCPError):
                    await client.read_resource("bookindex://documents/nosuch.pdf/tree")

    anyio.run(main)
    log = (tmp_path / "stderr.txt").read_text()
    assert "INFO" in log and "'bogus'" in log and "nosuch.pdf" in log, log


def test_mcp_over_http_with_keys(libtasn1_library: tuple[Path, Path], tmp_path: Path) -> None:
    lib, cache = libtasn1_library
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = cli_env(cache, BOOKINDEX_API_KEYS=KEY)
    with cli_server(["mcp", str(lib), "--transport", "http", "--port", str(port)], env, tmp_path,
                    tmp_path / "mcp.log", url):
        r = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 401 and r.json()["status"] == 401
        assert httpx.post(url, headers={"Authorization": "Bearer wrong"}, json={}).status_code == 401

        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async def main() -> None:
            with anyio.fail_after(240):
                async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=120) as http:
                    async with Client(streamable_http_client(url, http_client=http)) as client:
                        await exercise(client)

        anyio.run(main)


class SlowEngine(Engine):
    """An Engine whose ask, plan and search take `delay` seconds (a slow model)."""

    delay = 3.0

    def ask(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(self.delay)
        return super().ask(*args, **kwargs)

    plan = search = ask


def test_long_tool_calls_end_in_a_tool_error(tmp_path: Path) -> None:
    """ask, plan and search past `server.mcp_tool_timeout_s` answer a clear tool error (in
    memory, through the SDK's client); the quick tools are not limited."""
    from bookindex.core.config import load_settings

    settings = load_settings(overrides={"llm.provider": "none", "server.mcp_tool_timeout_s": 0.2,
                                        "cache.path": str(tmp_path / "cache")}, env={})
    server = build_server(SlowEngine(tmp_path / "lib", settings))

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(server) as client:
                for name, args in (("ask", {"question": "What is X?"}), ("plan", {"question": "What is X?"}),
                                   ("search", {"query": "X"})):
                    r = await client.call_tool(name, args)
                    text = "".join(getattr(c, "text", "") for c in r.content)
                    assert r.is_error and f"{name} did not finish within 0.2 s" in text, (name, text)
                    assert "mcp_tool_timeout_s" in text
                docs = await client.call_tool("list_documents", {})  # not limited, not slowed
                assert not docs.is_error and docs.structured_content == {"result": []}

    anyio.run(main)


class BrokenTreeEngine(Engine):
    """An Engine whose tree read crashes (a bug, not bad input), its message naming a folder."""

    def tree(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("tree cache corrupt at /srv/secret/lib/docs")


@pytest.mark.parametrize("verbosity", [0, 1])
def test_a_crashing_resource_is_one_stderr_line_without_verbose(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], verbosity: int) -> None:
    """A resource that crashes: the client gets the SDK's generic error (no folder, no traceback);
    stderr gets one ERROR line naming the exception, and its traceback only with `--verbose`."""
    from bookindex.core.config import load_settings
    from bookindex.mcp_server.strict import log_to_stderr

    settings = load_settings(overrides={"llm.provider": "none", "cache.path": str(tmp_path / "cache")}, env={})
    root = logging.getLogger()
    level = root.level
    handler = log_to_stderr(verbosity)  # as `run` does, before the server is built (onto capsys's stderr)
    server = build_server(BrokenTreeEngine(tmp_path / "lib", settings))

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(server) as client:
                with pytest.raises(MCPError) as caught:
                    await client.read_resource("bookindex://documents/any.pdf/tree")
                assert "/srv/secret" not in caught.value.message and "Traceback" not in caught.value.message

    try:
        anyio.run(main)
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "ERROR" in lines[0] and "RuntimeError: tree cache corrupt" in err, err
    if verbosity == 0:
        assert len(lines) == 1 and "Traceback" not in err, err
    else:
        assert "Traceback" in err
