"""Every bound a caller can meet, in one place and on the standard library alone.

The store's query models (``artifacts.queries``), the HTTP routes, the model
tools' JSON schemas, the MCP server's static tool table and the CLI's page
sizes all read these numbers, so what a model or a client is shown as a limit
is the limit that is enforced. The module imports nothing: the MCP server
answers ``tools/list`` from it before pydantic or the store are loaded.

``MAX_OFFSET`` is 2**53 - 1, the largest integer a JavaScript client (every
harness written in Node) can hold exactly: a schema's ``maximum`` above it
breaks those clients, and no output reaches it.
"""

from __future__ import annotations

MAX_OFFSET = 2**53 - 1
"""Any byte offset, size or count on the wire (JSON-safe integer)."""

# -- reads -------------------------------------------------------------------------------

MAX_WINDOW_BYTES = 16 * 1024 * 1024
"""Bytes one text, line or tail window may return over HTTP."""
DEFAULT_TEXT_LIMIT = 65_536

MAX_TAIL_LINES = 100_000
DEFAULT_TAIL_LINES = 100

DEFAULT_LINE_COUNT = 100
MAX_LINE_COUNT = 10_000

# -- grep and search ---------------------------------------------------------------------

MAX_PATTERN_CHARS = 1000
MAX_CONTEXT_LINES = 100
DEFAULT_GREP_MATCHES = 100
MAX_GREP_MATCHES = 10_000
"""Matches one grep page holds (the CLI follows pages up to this size)."""

DEFAULT_SEARCH_MATCHES = 50
MAX_SEARCH_MATCHES = 1000
"""Matching lines one search page holds."""
DEFAULT_SEARCH_SCAN = 64 * 1024 * 1024
MIN_SEARCH_SCAN = 1024
MAX_SEARCH_SCAN = 2**30

# -- listings ----------------------------------------------------------------------------

MAX_PAGE = 500
"""Rows one listing page holds."""
DEFAULT_PAGE = 50
MAX_CURSOR_CHARS = 1000
"""A search cursor (it carries the position in several outputs)."""
MAX_LIST_CURSOR_CHARS = 500
MAX_ID_CHARS = 200
MAX_OWNER_CHARS = 200
MAX_SESSION_CHARS = 200
MAX_TOOL_CHARS = 100
MAX_NAME_CHARS = 500
MAX_KIND_CHARS = 50

# -- the model tools ---------------------------------------------------------------------

DEFAULT_ANSWER_CHARS = 16_000
"""Bytes of content a model tool's answer holds unless the client's budget says less."""
MAX_ANSWER_CHARS = 64_000
"""The most a model tool's answer may hold (a larger ``limit`` is cut to this)."""
DEFAULT_TOOL_LINES = 200
DEFAULT_TOOL_GREP_MATCHES = 50
DEFAULT_TOOL_SEARCH_MATCHES = 30
DEFAULT_TOOL_LIST_ROWS = 20
MAX_TOOL_LIST_ROWS = 100

MAX_COMMAND_CHARS = 100_000
MAX_WORKDIR_CHARS = 4096
MAX_JOB_ID_CHARS = 100
MAX_TIMEOUT_MS = 600_000

MIN_PREVIEW_BUDGET = 2_000
MAX_PREVIEW_BUDGET = 1_000_000
DEFAULT_PREVIEW_BUDGET = 50_000
MAX_MEDIA_TYPE_CHARS = 200

MAX_TOKEN_LABEL_CHARS = 200
MAX_TOKEN_LIFETIME_S = 10 * 365 * 86400

TOKEN_CACHE_S = 2.0
"""How long a server trusts what it looked up about a token (a revocation made
by another process reaches it within this)."""
