"""The Model Context Protocol: the orchestrator's MCP server, its mesh tools and the MCP client."""
