"""A library on S3, against moto's S3 server on 127.0.0.1: index into s3://bucket/lib,
answer from a fresh process (which only reads S3; both use the configured embedder, since a
query checks the vectors' model), remove a document and add it back, and the
writer lock is one conditional PUT."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import free_port
from library_helpers import handbook_markdown
from typer.testing import CliRunner

from bookindex.cli.app import app
from bookindex.core.errors import InputError
from bookindex.storage import s3

moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")
runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def s3_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": f"http://{host}:{port}", "BOOKINDEX_CACHE_DIR": str(tmp_path / "cache")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    s3.client().create_bucket(Bucket="bucket")
    monkeypatch.chdir(tmp_path)
    try:
        yield env
    finally:
        server.stop()


def ask_fresh(env: dict[str, str], tmp_path: Path, question: str) -> dict:
    """`bookindex ask s3://bucket/lib` in a new process with its own (empty) cache directory."""
    full = {**os.environ, **env, "BOOKINDEX_CACHE_DIR": str(tmp_path / "reader-cache"),
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "bookindex.cli.app", "ask", "s3://bucket/lib", question,
                           "--method", "bm25", "--json"], env=full, capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def keys(prefix: str = "lib/") -> list[str]:
    out = s3.client().list_objects_v2(Bucket="bucket", Prefix=prefix)
    return [o["Key"] for o in out.get("Contents", [])]


def test_index_ask_remove_readd_on_s3(tmp_path: Path, s3_env: dict[str, str]):
    src = tmp_path / "src"
    src.mkdir()
    (src / "handbook.md").write_text(handbook_markdown())
    (src / "notes.md").write_text("# Notes\n\nThe zebra-crossing procedure needs two signals.\n")
    r = runner.invoke(app, ["index", str(src), "-i", "s3://bucket/lib", "--no-graph", "-q"])
    assert r.exit_code == 0, r.output
    catalog = json.loads(s3.client().get_object(Bucket="bucket", Key="lib/library.json")["Body"].read())
    assert len(catalog["documents"]) == 2
    gens = {k.split("/")[2] for k in keys("lib/docs/")}
    assert gens == {e["dir"] for e in catalog["documents"].values()}
    assert "lib/lock.json" not in keys()  # released

    notes = next(i for i, e in catalog["documents"].items() if e["name"] == "notes.md")
    answer = ask_fresh(s3_env, tmp_path, "zebra-crossing signals")
    assert answer["evidence"] and answer["evidence"][0]["doc_id"] == notes
    r = runner.invoke(app, ["remove", "s3://bucket/lib", "notes.md"])
    assert r.exit_code == 0, r.output
    after = json.loads(s3.client().get_object(Bucket="bucket", Key="lib/library.json")["Body"].read())
    assert list(after["documents"]) != [] and notes not in after["documents"]
    assert not [k for k in keys("lib/docs/") if k.split("/")[2] == catalog["documents"][notes]["dir"]]
    answer = ask_fresh(s3_env, tmp_path, "zebra-crossing signals")
    assert notes not in json.dumps(answer.get("evidence"))

    r = runner.invoke(app, ["index", str(src / "notes.md"), "-i", "s3://bucket/lib", "--no-graph", "-q"])
    assert r.exit_code == 0, r.output
    again = json.loads(s3.client().get_object(Bucket="bucket", Key="lib/library.json")["Body"].read())
    assert set(again["documents"]) == set(catalog["documents"])
    answer = ask_fresh(s3_env, tmp_path, "zebra-crossing signals")
    assert answer["evidence"][0]["doc_id"] == notes


def test_s3_writer_lock_is_exclusive(tmp_path: Path, s3_env: dict[str, str]):
    loc = s3.parse("s3://bucket/lib")
    assert loc is not None
    client = s3.client()
    with s3.s3_lock(client, loc, "first writer"):
        with pytest.raises(InputError, match="locked by .*first writer"):
            with s3.s3_lock(client, loc, "second writer"):
                pass
    with s3.s3_lock(client, loc, "third writer"):  # released: free again
        pass
    assert "lib/lock.json" not in keys()


def test_parse_s3_uris():
    assert s3.parse("s3://b/x/y/") == s3.S3Location("b", "x/y")
    assert s3.parse(Path("s3://b/lib")) == s3.S3Location("b", "lib")  # as pathlib collapses it
    assert s3.parse("/tmp/lib") is None
    with pytest.raises(InputError):
        s3.parse("s3://")
