"""`bookindex` CLI: global flags, foundation commands, and the registry of feature modules."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Optional

import typer
from pydantic import BaseModel, Field
from rich.markup import escape
from rich.table import Table

import bookindex
from bookindex.cli import ask as cli_ask
from bookindex.cli import library as cli_library
from bookindex.cli import serve as cli_serve
from bookindex.cli import skills as cli_skills
from bookindex.cli import stats as cli_stats
from bookindex.cli.context import CLIState, get_settings, set_current
from bookindex.cli.output import make_console
from bookindex.core.config import cache_dir, masked_settings
from bookindex.core.errors import BookIndexError, ConfigError
from bookindex.engine import Engine

# Feature modules: each exposes `register(app)`; add one line per feature.
FEATURE_MODULES = (cli_library, cli_ask, cli_stats, cli_serve, cli_skills)

app = typer.Typer(name="bookindex", no_args_is_help=True, add_completion=False,
                  pretty_exceptions_enable=False,
                  help="Question answering over long structured documents.")
config_app = typer.Typer(no_args_is_help=True, help="Inspect the configuration.")
llm_app = typer.Typer(no_args_is_help=True, help="Check the configured LLM.")
app.add_typer(config_app, name="config")
app.add_typer(llm_app, name="llm")

def _version(value: bool) -> None:
    if value:
        make_console().print(f"bookindex {bookindex.__version__}")
        raise typer.Exit()


@app.callback()
def _global(
    ctx: typer.Context,
    config: Optional[Path] = typer.Option(None, "--config", metavar="PATH",
                                          help="TOML config file (default: ./bookindex.toml)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Bypass the LLM disk cache."),
    set_: Optional[list[str]] = typer.Option(None, "--set", metavar="KEY=VALUE",
                                             help="Override a setting, e.g. --set llm.model=gpt-4o."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    state = CLIState(config_path=config)
    for item in set_ or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. --set llm.provider=openai")
        state.overrides[key.strip()] = value
        state.override_sources[key.strip()] = f"--set {key.strip()}"
    if no_cache:
        state.overrides["cache.enabled"] = False
        state.override_sources["cache.enabled"] = "--no-cache"
    ctx.obj = state
    set_current(state)


# ------------------------------------------------------------------------------------ config
@config_app.command("show")
def config_show(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")) -> None:
    """Print the effective configuration (secrets masked) and where each value came from."""
    import json

    settings = get_settings()
    data = masked_settings(settings)
    console = make_console(soft_wrap=False)
    if as_json:
        sources = {f"{sec}.{key}": settings.source_of(f"{sec}.{key}")
                   for sec, values in data.items() for key in values}
        console.print_json(json.dumps({"config_file": settings.config_file, "settings": data,
                                       "sources": {k: v for k, v in sources.items() if v != "default"}}))
        return
    table = Table(title=f"bookindex configuration (file: {settings.config_file or 'none'})")
    table.add_column("key", overflow="fold")
    table.add_column("value", overflow="fold")
    table.add_column("source", style="dim", overflow="fold")
    for section, values in data.items():
        for key, value in values.items():
            dotted = f"{section}.{key}"
            table.add_row(dotted, escape(repr(value) if isinstance(value, str) else str(value)),
                          escape(settings.source_of(dotted)))
    console.print(table)
    console.print(f"cache directory: {cache_dir(settings)}")
    for section in ("llm", "vlm", "embedding", "reranker"):
        env_name = getattr(settings, section).api_key_env
        if env_name and getattr(settings, section).provider in ("openai", "endpoint"):
            state = "set (value hidden)" if os.environ.get(env_name) else "not set"
            console.print(f"{section} API key: ${env_name} {state}")


# --------------------------------------------------------------------------------------- llm
class _CapitalAnswer(BaseModel):
    """The schema of the `llm test` round trip."""

    country: str = Field(description="the country asked about")
    capital: str = Field(description="its capital city")


@llm_app.command("test")
def llm_test(section: str = typer.Option("llm", "--section", help="llm or vlm."),
             use_cache: bool = typer.Option(False, "--cache", help="Allow a cached answer.")) -> None:
    """One schema-validated round trip to the configured LLM: model, latency, tokens."""
    if section not in ("llm", "vlm"):
        raise ConfigError(f"--section {section!r}: use llm or vlm")
    engine = Engine(settings=get_settings())
    console = make_console(soft_wrap=False)
    client = engine.providers.llm if section == "llm" else engine.providers.vlm
    if client is None:
        raise ConfigError("vlm.provider is none: configure a vision model first (vlm.provider, vlm.base_url)")
    provider = getattr(client, "provider", None)
    load = getattr(provider, "load", None)
    if load is not None and client.available:  # in-process model: report loading separately
        start = time.perf_counter()
        load()
        console.print(f"model load: {time.perf_counter() - start:.2f} s")
    start = time.perf_counter()
    answer = client.complete("What is the capital of France? Give the country and its capital.",
                             schema=_CapitalAnswer, stage="llm-test", max_tokens=128,
                             cache=use_cache)
    latency = time.perf_counter() - start
    usage = client.ledger.snapshot()["total"]
    console.print(f"provider: {getattr(provider, 'name', '?')}")
    console.print(f"model: {client.model}")
    console.print(f"answer: {answer.model_dump_json()}")
    console.print(f"latency: {latency:.2f} s")
    console.print(f"tokens: prompt {usage['prompt_tokens']}, completion {usage['completion_tokens']}"
                  f" (calls {usage['calls']}, cache hits {usage['cache_hits']})")


# ------------------------------------------------------------------------------------- embed
@app.command("embed")
def embed(text: str = typer.Argument(..., help="Text to embed.")) -> None:
    """Embed TEXT with the configured embedder and print the vector's dimension and norm."""
    import numpy as np

    embedder = Engine(settings=get_settings()).providers.embedder
    console = make_console(soft_wrap=False)
    start = time.perf_counter()
    vec = embedder.encode([text])[0]
    console.print(f"model: {embedder.name}")
    console.print(f"dimension: {vec.shape[0]}")
    console.print(f"norm: {float(np.linalg.norm(vec)):.6f}")
    console.print(f"first values: {np.round(vec[:5], 4).tolist()}")
    console.print(f"latency: {time.perf_counter() - start:.3f} s")


# ---------------------------------------------------------------------------------- features
def _register_features(target: typer.Typer) -> None:
    for module in FEATURE_MODULES:
        module.register(target)


_register_features(app)


def main(argv: list[str] | None = None) -> None:
    """Entry point: every error that reaches a user is one red line `error: FILE: problem` on
    stderr and exit code 2 (a BookIndexError, Typer's own usage errors, an unexpected OS error
    or input deeper than Python can walk), never a traceback or a boxed multi-line message."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        rc = app(args=args, prog_name="bookindex", standalone_mode=False)
    except BookIndexError as exc:
        _fail(str(exc), exc.exit_code)
    except typer.TyperException as exc:  # Typer's (vendored click's) usage errors
        if type(exc).__name__ == "NoArgsIsHelpError":
            exc.show()  # type: ignore[attr-defined]  # bare `bookindex`: the help, as before
            sys.exit(int(getattr(exc, "exit_code", 2)))
        _fail(_dash_name(exc, args) if type(exc).__name__ == "NoSuchOption" else _usage_message(exc), 2)
    except typer.Abort:
        _fail("interrupted", 130)
    except RecursionError:
        _fail("input nested too deeply to read (RecursionError)", 2)
    except OSError as exc:
        _fail(f"{exc.filename or 'file'}: {exc.strerror or exc}", 2)
    sys.exit(rc if isinstance(rc, int) else 0)


def _fail(message: str, code: int) -> None:
    set_current(None)
    text = " ".join(message.split())
    make_console(stderr=True).print(f"[bold red]error:[/bold red] {escape(text)}")
    sys.exit(code)


def _usage_message(exc: Exception) -> str:
    """Click's message with the parameter it concerns in front, as `PARAM: problem`."""
    fmt = getattr(exc, "format_message", None)
    msg = fmt() if callable(fmt) else str(exc)
    param = getattr(exc, "param", None)
    opts = [o for o in getattr(param, "opts", None) or [] if str(o).startswith("-")]
    hint = getattr(exc, "param_hint", None) or (opts[0] if opts else getattr(param, "name", None))
    if isinstance(hint, (list, tuple)):
        hint = "/".join(hint)
    if hint and msg.startswith("Invalid value for"):
        msg = msg.split(":", 1)[-1].strip()
    return f"{hint}: {msg}" if hint else msg


def _dash_name(exc: Exception, args: list[str]) -> str:
    """A file name starting with a dash is taken for an option: say so, and how to pass it."""
    name = str(getattr(exc, "option_name", "") or "-")
    token = next((a for a in args if a == name or (a.startswith(name) and not a.startswith("--"))), name)
    if Path(token).exists() or "." in token:
        return (f"{token}: a name starting with '-' is read as an option; put `--` before it "
                f"(bookindex ... -- {token}) or write ./{token}")
    return f"{token}: no such option (see --help)"


if __name__ == "__main__":
    main()
