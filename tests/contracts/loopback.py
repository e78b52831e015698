"""A JSON-over-HTTP fake server on 127.0.0.1 for endpoint clients (embeddings, rerank)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

Route = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Loopback:
    base_url: str  # http://127.0.0.1:PORT
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (path, JSON body)


@contextmanager
def serve(routes: dict[str, Route]) -> Iterator[Loopback]:
    """Answer POST `path` with `routes[path](body)` as JSON until the block ends; the server binds
    127.0.0.1 on a free port, runs in a daemon thread and is shut down on exit."""
    record: list[tuple[str, dict[str, Any]]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep pytest output clean
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            record.append((self.path, body))
            route = routes.get(self.path)
            status, payload = (200, route(body)) if route else (404, {"error": f"no route {self.path}"})
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Loopback(f"http://127.0.0.1:{server.server_address[1]}", record)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
