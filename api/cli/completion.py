"""Shell completion scripts, made from the CLI's own parser (so they can never
list a verb or an option the CLI does not have): bash, zsh (through bash's
completion functions) and fish."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..client.calls import ApiCalls


def _values(parser: argparse.ArgumentParser) -> dict[str, dict[str, list[str]]]:
    """Each verb's options that take one of a few values, and those values."""
    values: dict[str, dict[str, list[str]]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                for a in sub._actions:
                    if a.choices and a.option_strings:
                        for option in a.option_strings:
                            values.setdefault(name, {})[option] = [str(c) for c in a.choices]
    return values


def _takes_ids(parser: argparse.ArgumentParser) -> list[str]:
    """The verbs whose positional arguments are artifact ids."""
    verbs: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if any(not a.option_strings and a.help == "art_…" for a in sub._actions):
                    verbs.append(name)
    return verbs


def _verbs(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Each verb and its options (sub-actions of a verb count as words too)."""
    verbs: dict[str, list[str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                words: list[str] = []
                for a in sub._actions:
                    if isinstance(a, argparse._SubParsersAction):
                        words += list(a.choices)
                    words += [o for o in a.option_strings if o.startswith("--")]
                verbs[name] = sorted(set(words))
    return verbs


def bash(parser: argparse.ArgumentParser) -> str:
    verbs = _verbs(parser)
    cases = "\n".join(f'        {v}) opts="{" ".join(w)}" ;;' for v, w in verbs.items())
    value_cases = "\n".join(
        f'        "{verb} {option}") values="{" ".join(choices)}" ;;'
        for verb, options in _values(parser).items()
        for option, choices in options.items()
    )
    with_ids = "|".join(_takes_ids(parser)) or "-"
    return f"""# overspill completion for bash: eval "$(overspill completion bash)"
_overspill() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" opts="" values=""
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "{" ".join(verbs)} --help --version" -- "$cur"))
        return
    fi
    case "${{COMP_WORDS[1]}} $prev" in
{value_cases}
    esac
    if [ -n "$values" ]; then
        COMPREPLY=($(compgen -W "$values" -- "$cur"))
        return
    fi
    case "${{COMP_WORDS[1]}}" in
{cases}
    esac
    case "$cur" in
        -*) ;;
        *) case "${{COMP_WORDS[1]}}" in
            {with_ids})
                # The ids, newest first (kept in that order where bash can).
                compopt -o nosort 2>/dev/null
                COMPREPLY=($(compgen -W "$(overspill completion ids "$cur" 2>/dev/null)" -- "$cur"))
                [ ${{#COMPREPLY[@]}} -gt 0 ] && return ;;
           esac ;;
    esac
    COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
}}
complete -o default -F _overspill overspill
"""


def ids(api: ApiCalls, prefix: str, limit: int = 50) -> list[str]:
    """The caller's artifact ids that start with ``prefix``, newest first."""
    page = api.list({"limit": 200, "sort": "created", "order": "desc"})
    found = [str(item["id"]) for item in page.get("items") or []]
    return [i for i in found if i.startswith(prefix)][:limit]


def zsh(parser: argparse.ArgumentParser) -> str:
    return (
        '# overspill completion for zsh: eval "$(overspill completion zsh)"\n'
        "autoload -U +X bashcompinit && bashcompinit\n" + bash(parser).split("\n", 1)[1]
    )


def fish(parser: argparse.ArgumentParser) -> str:
    lines = ["# overspill completion for fish: overspill completion fish | source"]
    verbs = _verbs(parser)
    lines.append(f"complete -c overspill -f -n __fish_use_subcommand -a '{' '.join(verbs)}'")
    values = _values(parser)
    for verb in _takes_ids(parser):
        lines.append(
            f"complete -c overspill -f -k -n '__fish_seen_subcommand_from {verb}' "
            "-a '(overspill completion ids (commandline -ct) 2>/dev/null)'"
        )
    for verb, words in verbs.items():
        for w in words:
            choices = values.get(verb, {}).get(w)
            if w.startswith("--") and choices:
                lines.append(
                    f"complete -c overspill -n '__fish_seen_subcommand_from {verb}' "
                    f"-l {w[2:]} -xa '{' '.join(choices)}'"
                )
            elif w.startswith("--"):
                lines.append(
                    f"complete -c overspill -n '__fish_seen_subcommand_from {verb}' -l {w[2:]}"
                )
            else:
                lines.append(
                    f"complete -c overspill -f -n '__fish_seen_subcommand_from {verb}' -a {w}"
                )
    return "\n".join(lines) + "\n"


SHELLS = {"bash": bash, "zsh": zsh, "fish": fish}
