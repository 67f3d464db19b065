"""Editing a harness's own config: what the `install` and `uninstall` verbs do.

``install`` writes one ``overspill`` entry (MCP server, hook, shell) into the
file and format each harness reads; ``install_shell`` routes a harness's own
shell into the store without changing what the harness lets run;
``install_options`` is what one install says (who, which harness, the absolute
program, the environment); ``config_files`` edits a file a person also edits by
hand, keeping everything else byte for byte; ``jsonc`` parses JSON with comments
into spans so an edit replaces only its own.

May import the agent side beside it (``harnesses``, ``hooks``) and the client;
nothing of the agent side imports it: only the CLI's ``install`` verb does.
"""
