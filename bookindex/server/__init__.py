"""The REST server (`bookindex serve`): a FastAPI shell over the Engine.

Modules: `app` (routes), `auth` (API keys, roles, start-up checks), `problems` (RFC 9457 error
bodies), `validate` (user strings checked before they touch a lookup or a path), `jobs`
(persisted index jobs, one writer), `pages` (page images), `sse` (streamed answers), `run`
(start-up). Nothing here retrieves or indexes: it calls the Engine.
"""

from bookindex.server.app import create_app
from bookindex.server.auth import Keys, check_bind

__all__ = ["create_app", "Keys", "check_bind"]
