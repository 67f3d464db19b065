"""The child's environment: never the parent's credentials, always plain output."""

from __future__ import annotations

from collections.abc import Mapping

_CREDENTIAL_WORDS = ("KEY", "SECRET", "TOKEN", "PASSWORD")
FIXED = {"NO_COLOR": "1", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"}


def looks_like_credential(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in _CREDENTIAL_WORDS)


def child_environment(
    parent: Mapping[str, str], explicit: Mapping[str, str], reserved_prefix: str
) -> dict[str, str]:
    """Parent minus credential-shaped and reserved names, then the caller's explicit
    values (so a credential can be passed on purpose), then the fixed overrides."""
    env = {
        k: v
        for k, v in parent.items()
        if not looks_like_credential(k) and not (reserved_prefix and k.startswith(reserved_prefix))
    }
    env.update(explicit)
    env.update(FIXED)
    return env
