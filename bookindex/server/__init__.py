"""The REST server (`bookindex serve`): a FastAPI shell over the Engine.

Modules: `app` (routes), `auth` (API keys, roles, the bind check), `middleware` (key guard and
upload cap, shared with the MCP server), `problem` + `handlers` (RFC 9457 error bodies), `validate` (user
strings checked before they touch a lookup or a path), `jobs` (persisted index jobs, one
writer), `builds` (a build in a child process), `pages` (page images), `sse` (streamed
answers), `views` (outlines), `run` (start-up).
Nothing here retrieves or indexes: it calls the Engine. Import the modules you need; this file
imports nothing, so the MCP server can use `validate` and `auth` without loading FastAPI.
"""
