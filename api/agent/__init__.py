"""The agent side: what a model calls and reads. The tools (``tools``: the table,
the handlers, the answers), ``bash`` as tools, saving any tool's oversized
result (``result_saver``), the MCP stdio server (``mcp_stdio``) and
its table (``mcp_table``), and what is known of each harness (``harnesses``)."""
