"""`larik-jupyter mcp`: an MCP server over stdio that lets an outside agent work in a running kernel."""
