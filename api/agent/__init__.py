"""The agent side: what a model calls and reads. The tools (``tools``: the table,
the handlers, the answers), ``bash`` as tools, saving any tool's oversized
result (``result_saver``), the MCP stdio server (``mcp_stdio``) and
its table (``mcp_table``), what is known of each harness (``harnesses``), what
overspill answers a harness's hooks (``hooks``) and its shell (``harness_shell``),
and, in a package of its own, the editing of a harness's config files that
``overspill install`` does (``harness_config``)."""
