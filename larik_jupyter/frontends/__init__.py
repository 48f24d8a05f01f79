"""The front ends: the notebook (magics, widgets, bridge), the CLI, the Jupyter server extension
and the MCP server with its kernel end. Each drives `Agent` through the public surface."""
