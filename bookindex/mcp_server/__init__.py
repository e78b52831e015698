"""The MCP server (`bookindex mcp LIB`): the library's documents as tools and resources for agents.

Built on the official `mcp` Python SDK, major version 2 (pinned `mcp>=2,<3`), with its high-level
`mcp.server.mcpserver.MCPServer` API (what 1.x called FastMCP). Tools call the Engine only.
"""

from bookindex.mcp_server.server import build_server, run

__all__ = ["build_server", "run"]
