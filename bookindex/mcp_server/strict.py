"""Where the MCP SDK is laxer than the REST server, made as strict: arguments, resource errors, stderr.

- The SDK builds a tool's argument model with pydantic's default (`extra="ignore"`): a misspelt
  argument (`qeury`, `docs`) vanishes and the tool answers as if it had not been given, where REST
  refuses an extra field with 422. `StrictServer.call_tool` checks the names a call passes against
  the tool's declared input schema before the SDK runs it and answers a tool error naming the
  unknown ones; `list_tools` declares `additionalProperties: false`, so a client that validates
  against the schema knows before it calls.
- The SDK takes anything a resource function raises other than its `ResourceError` for a crash:
  the client gets "Error creating resource from template ..." and the server logs the traceback.
  `guard_resource` turns the errors REST expects (`problem.anticipated`) into the SDK's resource
  errors with REST's one-line detail: a missing document is `ResourceNotFoundError` (-32602).
- The SDK's `configure_logging` gives the root logger a handler that passes every level, so a
  library whose logger sets itself to DEBUG (bm25s: "Building index from tokens") writes to the
  stderr an agent reads. `log_to_stderr` installs the one handler, at WARNING unless `--verbose`,
  and one line per record: a crash's traceback only with `--verbose`.

Imports the SDK (about 1 s): imported by `build_server` and `run`, never at CLI start-up.
"""

from __future__ import annotations

import functools
import logging
import sys
from typing import Any, Callable

from mcp.server.mcpserver import Context, MCPServer  # Context: re-used by build_server, importing the SDK once here
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.types import CallToolResult, InputRequiredResult
from mcp.types import Tool as MCPTool

from bookindex.server.problem import anticipated
from bookindex.server.redact import Redactor

NAMES_SHOWN = 5  # unknown arguments named in one error; more are counted
NAME_CHARS = 40  # an argument name is cut to this many characters in the error (it is the caller's text)


def unknown_arguments(tool: str, given: list[str], declared: list[str]) -> str | None:
    """The tool error for argument names `tool` does not declare, or None when all are declared:
    the unknown ones (as the caller spelt them, cut short) and the ones the tool takes."""
    unknown = [name for name in given if name not in declared]
    if not unknown:
        return None
    shown = ", ".join(repr(n[:NAME_CHARS]) for n in unknown[:NAMES_SHOWN])
    more = f" and {len(unknown) - NAMES_SHOWN} more" if len(unknown) > NAMES_SHOWN else ""
    takes = ", ".join(declared) or "no arguments"
    noun = "argument" if len(unknown) == 1 else "arguments"
    return f"unknown {noun} {shown}{more}: {tool} takes {takes}"


class StrictServer(MCPServer):
    """`MCPServer` refusing tool arguments the tool does not declare, as REST refuses extra fields."""

    async def list_tools(self) -> list[MCPTool]:
        """The SDK's tool list with `additionalProperties: false` in each input schema (what `call_tool` enforces)."""
        return [t.model_copy(update={"input_schema": {**t.input_schema, "additionalProperties": False}})
                for t in await super().list_tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None) -> CallToolResult | InputRequiredResult:
        """Refuse undeclared argument names with a tool error (`isError`), then call as the SDK does.
        An unknown tool is left to the SDK, which answers its own tool error."""
        schema = next((t.input_schema for t in await super().list_tools() if t.name == name), None)
        if schema is not None:
            refusal = unknown_arguments(name, list(arguments), list(schema.get("properties", {})))
            if refusal:
                raise ToolError(refusal)
        return await super().call_tool(name, arguments, context)


def guard_resource(redactor: Redactor) -> Callable[[Any], Any]:
    """A decorator for resource functions: REST's expected errors become the SDK's resource errors
    with REST's detail (no server folder in it), so the SDK answers them and logs no traceback.
    A 4xx names no resource the server can give (-32602, `ResourceNotFoundError`); an unreadable
    index (409) is the server's state (-32603, `ResourceError`). Anything else stays a crash."""
    def guard(fn: Any) -> Any:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return redactor.value(fn(*args, **kwargs))
            except Exception as e:
                known = anticipated(e)
                if known is None:
                    raise
                status, detail = known
                error = ResourceNotFoundError if 400 <= status < 500 and status != 409 else ResourceError
                raise error(redactor.text(detail)) from None
        return call
    return guard


class OneLine(logging.Formatter):
    """A record on one line: an exception as `Type: message` after it, not its traceback."""

    def format(self, record: logging.LogRecord) -> str:
        exc_info, record.exc_info, record.exc_text = record.exc_info, None, None
        try:
            line = super().format(record)
        finally:
            record.exc_info = exc_info
        if exc_info and exc_info[1] is not None:
            cause = exc_info[1].__cause__ or exc_info[1]
            line += f" ({type(cause).__name__}: {' '.join(str(cause).split())[:300]})"
        return " ".join(line.split("\n"))


def log_to_stderr(verbosity: int) -> logging.Handler:
    """The server's logging: one stderr handler on the root logger, replacing any other (the SDK's
    own, from `MCPServer()`, installs only when the root has none). 0: WARNING and above, one line
    each; 1 (`-v`): INFO too (each refused call, each resource error), with tracebacks; 2 (`-vv`):
    DEBUG (the libraries' own, bm25s and the SDK's per-message lines among them). Returns the handler."""
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(level)  # the handler, not just the root logger: a library logger set to DEBUG propagates past the root's level
    fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    handler.setFormatter(OneLine(fmt) if verbosity <= 0 else logging.Formatter(fmt))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    return handler
