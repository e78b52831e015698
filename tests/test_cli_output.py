"""Output sent to a pipe is never cut: every command, in a child process whose stdout is a pipe
and whose `COLUMNS` says 40, prints its long lines whole (no wrapping, no cropping, no "…")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes import FakeEmbedder

from bookindex.core.config import load_settings
from bookindex.engine import Engine
from bookindex.indexing.library import DocumentLibrary

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent

# Longer than 40 columns each, and long enough that a table holding the name is wider than 200.
NAME = "a_field_guide_to_calibrating_the_spectrometer_array_of_the_northern_observatory_in_every_season_of_the_year.md"
LONG_TITLE = "2.1 Calibrating the spectrometer array against the reference lamp at dawn"
LONG_MODEL = "an-inference-endpoint-model-name-that-is-far-longer-than-forty-columns"
GUIDE = f"""# 1 Overview

The northern observatory keeps one spectrometer array and one reference lamp in its east dome.

# 2 Procedures

## {LONG_TITLE}

Warm the reference lamp for twenty minutes, then record the array's response at each of the
twelve emission lines and store the offsets in the calibration log.

## 2.2 Cleaning the optics

Wipe the entrance slit with a lint-free cloth once a week.
"""

# The child: the test embedder in place of the configured model, then each command in turn
# through the CLI's own entry point, each followed by a marker line with its exit code.
CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
from fakes import FakeEmbedder
from bookindex.indexing.library import DocumentLibrary
from bookindex.services.providers import ProviderSet
emb = FakeEmbedder()
DocumentLibrary.embedder = property(lambda self: emb)
ProviderSet.embedder = property(lambda self: emb)
from bookindex.cli.app import main
for args in json.loads(sys.argv[2]):
    rc = 0
    try:
        main(args)
    except SystemExit as exc:
        rc = exc.code
    print(f"=== exit {rc}", flush=True)
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A one-document library, and the id of its section with the long title."""
    root = tmp_path_factory.mktemp("cliout")
    md = root / NAME
    md.write_text(GUIDE)
    settings = load_settings(overrides={"llm.provider": "none"}, env={})
    DocumentLibrary.open(root / "lib", settings, embedder=FakeEmbedder()).add(md)
    tree = Engine(root / "lib", settings, embedder=FakeEmbedder()).tree(NAME)
    node_id = next(n.id for n in tree.nodes.values() if n.title == LONG_TITLE)
    return root / "lib", node_id


def _run_piped(commands: list[list[str]], cwd: Path) -> list[str]:
    """Run the commands in one child with stdout a pipe and COLUMNS=40; each command's output."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    env.update(COLUMNS="40", BOOKINDEX_LLM__PROVIDER="none", BOOKINDEX_CACHE_DIR=str(cwd / "cache"),
               PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", CHILD, str(TESTS), json.dumps(commands)], cwd=cwd, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    parts = proc.stdout.split("=== exit ")
    outputs, codes = parts[:1], []
    for part in parts[1:]:
        code, _, rest = part.partition("\n")
        codes.append(code)
        outputs.append(rest)
    assert codes == ["0"] * len(commands), (codes, proc.stderr[-2000:])
    return outputs[: len(commands)]


def _whole_on_a_line(output: str, *pieces: str) -> bool:
    return any(all(p in line for p in pieces) for line in output.splitlines())


def test_every_command_prints_whole_lines_to_a_narrow_pipe(library: tuple[Path, str]) -> None:
    lib, node_id = library
    commands = {
        "ask --explain": ["ask", str(lib), "How is the spectrometer array calibrated against the reference lamp?",
                          "--doc", NAME, "--explain"],
        "tree": ["tree", str(lib)],
        "show": ["show", str(lib), node_id],
        "stats": ["stats", str(lib)],
        "list": ["list", str(lib)],
        "config show": ["--set", f"llm.model={LONG_MODEL}", "config", "show"],
    }
    outputs = dict(zip(commands, _run_piped(list(commands.values()), lib.parent)))
    cut: dict[str, list[str]] = {}

    def fault(name: str, why: str) -> None:
        cut.setdefault(name, []).append(why)

    for name, out in outputs.items():
        if "…" in out:
            fault(name, "an ellipsis")
    explain = outputs["ask --explain"]
    params = [line.split("params=", 1)[1] for line in explain.splitlines() if "params=" in line]
    if not params:
        fault("ask --explain", "no operator line with its params")
    for p in params:  # an operator's parameters are one whole JSON object on its line
        try:
            json.loads(p.split("  LLM ", 1)[0].strip())
        except ValueError:
            fault("ask --explain", f"params cut: {p!r}")
    if not _whole_on_a_line(explain, "How is the spectrometer array calibrated against the reference lamp?", "→"):
        fault("ask --explain", "the question's line")
    if not _whole_on_a_line(outputs["tree"], LONG_TITLE, "[section L2"):
        fault("tree", "the long section's line")
    if not _whole_on_a_line(outputs["show"], f"path: {NAME} > 2 Procedures"):
        fault("show", "the path line")
    for name in ("stats", "list"):
        if not _whole_on_a_line(outputs[name], NAME, "│"):
            fault(name, "the document's row")
    if not _whole_on_a_line(outputs["config show"], "llm.model", repr(LONG_MODEL)):
        fault("config show", "the llm.model row")
    assert not cut, {name: (why, outputs[name][:3000]) for name, why in cut.items()}
