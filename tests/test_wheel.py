"""The install a user gets: the wheel built from this checkout holds `bookindex` (with its package
data) and nothing else, and installed into a fresh virtualenv, not editable, it runs the main job
from the `bookindex` console script while `import parsing`, `operators` and `retrieval` fail.

parsing/, operators/ and retrieval/ are top-level folders of the repository reached through links
in bookindex/; the wheel must hold them as real files under bookindex/, never as top-level packages.

Isolation: the fresh venv sees the dependencies of the test environment through a `.pth` file that
lists its site-packages folders (no reinstall of hundreds of MB). A `.pth` line adds a folder to
sys.path but does not run the `.pth` files inside it, so the test environment's editable install
of bookindex (an import hook started by such a file) is invisible there; the fixture checks that
those folders hold no `bookindex`, `parsing`, `operators` or `retrieval` of their own. Every
command runs without PYTHONPATH, from a temporary working directory outside the checkout, with a
temporary HOME and caches; only the embedder's ONNX export is reused, read-only, when it exists.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import shutil
import site
import stat
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from bookindex.core.config import cache_dir

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
LINKED = ("parsing", "operators", "retrieval")  # top-level folders installed as bookindex.<name>
PACKAGE_DATA = ("bookindex/py.typed", "bookindex/server/inspector/templates/base.html",
                "bookindex/server/inspector/static/inspector.css", "bookindex/server/inspector/static/inspector.js",
                "bookindex/server/inspector/static/vendor/cytoscape.min.js",
                "bookindex/server/inspector/static/vendor/cytoscape.LICENSE")
# what the build copy leaves out: at the root, the checkout's environments and outputs; anywhere,
# build leftovers (an egg-info from an editable install would feed setuptools a stale file list)
ROOT_SKIP = {".git", ".venv", "venv", "build", "dist", "lib", "out", "bench-out", ".bookindex-cache",
             ".mypy_cache", ".ruff_cache", ".pytest_cache"}
ANY_SKIP = ("__pycache__", "*.pyc", "*.egg-info")
QUESTION = "Which function decodes a DER encoded buffer into an ASN.1 structure?"


@dataclass
class Install:
    """A fresh venv with the wheel installed, and the environment its commands run in."""

    venv: Path
    site: Path
    work: Path  # a temporary working directory outside the checkout
    env: dict[str, str]

    def run(self, *args: str | Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(a) for a in args], cwd=self.work, env=self.env, capture_output=True,
                              text=True, timeout=timeout)

    def python(self, code: str) -> subprocess.CompletedProcess[str]:
        return self.run(self.venv / "bin" / "python", "-c", code)


def _ignore(folder: str, names: list[str]) -> set[str]:
    skipped = set(shutil.ignore_patterns(*ANY_SKIP)(folder, names))
    if Path(folder) == REPO:
        skipped |= ROOT_SKIP & set(names)
    return skipped


def _isolated_env(tmp: Path, venv: Path | None = None) -> dict[str, str]:
    """os.environ without anything that points Python, pip, bookindex or a model cache elsewhere;
    HOME, XDG folders, caches and the bookindex cache in `tmp`; no network, no user site."""
    drop = ("PYTHON", "PIP_", "BOOKINDEX_", "VIRTUAL_ENV", "XDG_", "HF_", "TRANSFORMERS_", "SENTENCE_TRANSFORMERS_",
            "TORCH_", "CONDA_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    home = tmp / "home"
    for d in (home, home / ".cache", home / ".config", home / ".local" / "share"):
        d.mkdir(parents=True, exist_ok=True)
    # the test venv's bin/ leaves PATH (a system Python's folder, /usr/bin, stays: it holds tesseract and the like)
    test_bin = {os.path.realpath(sysconfig.get_path("scripts"))} if sys.prefix != sys.base_prefix else set()
    path = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p and os.path.realpath(p) not in test_bin]
    if venv is not None:
        path.insert(0, str(venv / "bin"))
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_DATA_HOME=str(home / ".local" / "share"), TMPDIR=str(tmp), PATH=os.pathsep.join(path),
               BOOKINDEX_CACHE_DIR=str(tmp / "cache"), PYTHONNOUSERSITE="1", PIP_NO_INDEX="1",
               PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", COLUMNS="200")
    return env


def _check(proc: subprocess.CompletedProcess[str], what: str) -> str:
    assert proc.returncode == 0, f"{what} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the source copy it was built from). The build runs on a copy of the checkout
    (links kept as links) so that setuptools' build/ and egg-info never land in the checkout."""
    tmp = tmp_path_factory.mktemp("wheel")
    src, out = tmp / "src", tmp / "dist"
    shutil.copytree(REPO, src, symlinks=True, ignore=_ignore)
    _check(subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out),
                           str(src)], cwd=tmp, env=_isolated_env(tmp), capture_output=True, text=True, timeout=300),
           "pip wheel")
    (wheel,) = out.glob("bookindex-*.whl")
    return wheel, src


@pytest.fixture(scope="module")
def installed(built: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Install:
    tmp = tmp_path_factory.mktemp("install")
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    for name in ("bookindex", *LINKED):  # the folders the fresh venv borrows must not provide these
        spec = importlib.machinery.PathFinder.find_spec(name, deps)
        assert spec is None, (f"the test environment's site-packages provide `{name}` ({spec.origin or spec.submodule_search_locations}): "
                              "a fresh venv that borrows them cannot show what the wheel installs")
    venv = tmp / "venv"
    _check(subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True,
                          env=_isolated_env(tmp), timeout=120), "python -m venv")
    env = _isolated_env(tmp, venv)
    venv_site = Path(_check(subprocess.run([str(venv / "bin" / "python"), "-c",
                                            "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                           env=env, capture_output=True, text=True, timeout=60), "venv purelib").strip())
    (venv_site / "_bookindex_test_dependencies.pth").write_text("".join(f"{p}\n" for p in deps))
    # the ONNX export of the embedder, when this user has one: linked, so nothing is written there
    onnx = cache_dir() / "onnx"
    if onnx.is_dir():
        (tmp / "cache" / "onnx").mkdir(parents=True)
        for f in onnx.glob("*.onnx"):
            (tmp / "cache" / "onnx" / f.name).symlink_to(f)
    work = tmp / "work"
    work.mkdir()
    inst = Install(venv, venv_site, work, env)
    # --ignore-installed: pip would otherwise find the test environment's bookindex metadata in the
    # borrowed folders and try to uninstall it first (it declines: outside this environment)
    _check(inst.run(venv / "bin" / "python", "-m", "pip", "install", "--no-deps", "--ignore-installed", built[0]),
           "pip install the wheel")
    return inst


def test_wheel_holds_bookindex_and_nothing_else(built: tuple[Path, Path]) -> None:
    wheel, src = built
    with zipfile.ZipFile(wheel) as z:
        infos = z.infolist()
        top_level = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/top_level.txt"))).decode()
    names = {i.filename for i in infos}
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not (t.startswith("bookindex-") and t.endswith(".dist-info"))} == {"bookindex"}, tops
    assert top_level.split() == ["bookindex"]
    # every file of the package tree, links followed, is in the wheel, and the wheel holds no other
    expected = {(Path(d) / f).relative_to(src).as_posix()
                for d, dirs, files in os.walk(src / "bookindex", followlinks=True)
                for f in files if "__pycache__" not in Path(d).parts and not f.endswith(".pyc")}
    assert {n for n in names if n.startswith("bookindex/")} == expected
    assert set(PACKAGE_DATA) <= names
    assert len([n for n in names if n.startswith("bookindex/server/inspector/templates/")]) >= 5


def test_linked_packages_are_real_files_in_the_wheel(built: tuple[Path, Path]) -> None:
    wheel, _ = built
    with zipfile.ZipFile(wheel) as z:
        links = [i.filename for i in z.infolist() if stat.S_ISLNK(i.external_attr >> 16)]
        assert links == []
        for pkg in LINKED:
            files = [n for n in z.namelist() if n.startswith(f"bookindex/{pkg}/")]
            assert f"bookindex/{pkg}/__init__.py" in files
            for n in files:
                assert z.read(n) == (REPO / n.removeprefix("bookindex/")).read_bytes(), n


def test_generic_names_are_not_importable(installed: Install) -> None:
    for name in LINKED:
        proc = installed.python(f"import {name}")
        assert proc.returncode != 0 and f"ModuleNotFoundError: No module named '{name}'" in proc.stderr, (name, proc.stderr)


def test_bookindex_imports_from_the_fresh_venv(installed: Install) -> None:
    out = _check(installed.python("import bookindex, bookindex.parsing.pdf as m; print(bookindex.__file__); print(m.__file__)"),
                 "import bookindex.parsing.pdf")
    venv = installed.venv.resolve()
    for f in out.split():
        assert Path(f).resolve().is_relative_to(venv), f
    for pkg in LINKED:  # installed as folders of their own, not as links back into the checkout
        assert (installed.site / "bookindex" / pkg).is_dir() and not (installed.site / "bookindex" / pkg).is_symlink()


def test_main_job_runs_from_the_console_script(installed: Install) -> None:
    bookindex = installed.venv / "bin" / "bookindex"
    _check(installed.run(bookindex, "index", REPO / "data" / "libtasn1.pdf", "-i", "LIB"), "bookindex index")
    assert (installed.work / "LIB").is_dir()
    out = _check(installed.run(bookindex, "--set", "llm.provider=none", "ask", "LIB", QUESTION), "bookindex ask")
    text = " ".join(out.split())
    # the extractive answer (no LLM): the span that answers, cited, then where it comes from
    # as `SPAN [k] (from "ENTRY", p. N: sentence)`
    assert re.search(r'asn1_der_decoding \[\d+\] \(from "asn1_der_decoding", p\. \d+(?: \(printed \w+\))?: .+?\)', text), out
    assert "LLM calls 0" in text, out
