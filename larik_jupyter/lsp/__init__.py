"""Language servers: diagnostics for the files the agent writes, from real LSP servers.

`manager.LspManager` owns one `client.LspClient` per configured server for the life of an
agent; each client talks JSON-RPC over the server's stdio through `connection.Connection`.
"""
