"""The child's environment: never the parent's credentials, always plain output.

A name is credential-shaped when it contains one of the contract's four words
(KEY, SECRET, TOKEN, PASSWORD) or one of the others credentials go by
(``MY_PASSWD``, ``API_CREDENTIALS``, ``SSH_PRIVATE``, ``COOKIE``), or ends in a
short form that would match too much as a substring (``DB_PASS``, ``GH_PAT``,
``SENTRY_DSN``, ``NPM_AUTH``; ``PATH`` stays). A value that is a URL with a
password in it (``DATABASE_URL=postgres://u:pw@host/db``, ``HTTP_PROXY``) is a
credential whatever its name.

The values scrubbed are also what the redactor masks when they turn up in the
output anyway (a file the command reads, a config it prints): ``known_secrets``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_CREDENTIAL_WORDS = ("KEY", "SECRET", "TOKEN", "PASSWORD")  # contract
_MORE_WORDS = ("PASSWD", "CREDENTIAL", "PRIVATE", "COOKIE", "WEBHOOK")
_SHORT_FORMS = ("PASS", "PAT", "DSN", "AUTH", "PWD")  # whole name or after "_"
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:[^\s/@]+@")
FIXED = {"NO_COLOR": "1", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"}
# Names that end in a short form but are the shell's own, never a credential.
_NOT_CREDENTIALS = frozenset({"PWD", "OLDPWD"})


def looks_like_credential(name: str, value: str = "") -> bool:
    upper = name.upper()
    if upper in _NOT_CREDENTIALS:
        return False
    if any(word in upper for word in _CREDENTIAL_WORDS + _MORE_WORDS):
        return True
    if any(upper == short or upper.endswith("_" + short) for short in _SHORT_FORMS):
        return True
    return "://" in value and _URL_PASSWORD.search(value) is not None


def child_environment(
    parent: Mapping[str, str], explicit: Mapping[str, str], reserved_prefix: str
) -> dict[str, str]:
    """Parent minus credential-shaped and reserved names, then the caller's explicit
    values (so a credential can be passed on purpose), then the fixed overrides."""
    env = {
        k: v
        for k, v in parent.items()
        if not looks_like_credential(k, v)
        and not (reserved_prefix and k.startswith(reserved_prefix))
    }
    env.update(explicit)
    env.update(FIXED)
    return env


def known_secrets(parent: Mapping[str, str], explicit: Mapping[str, str]) -> list[tuple[str, str]]:
    """(name, value) of every credential in either environment: the parent's that
    were kept from the child (the harness's own token among them) and the explicit
    ones passed on purpose (the child has them, so it can print them)."""
    found = {
        k: v for src in (parent, explicit) for k, v in src.items() if looks_like_credential(k, v)
    }
    return sorted(found.items())
