"""Shell completion scripts, made from the CLI's own parser (so they can never
list a verb or an option the CLI does not have): bash, zsh (through bash's
completion functions) and fish."""

from __future__ import annotations

import argparse


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
    return f"""# overspill completion for bash: eval "$(overspill completion bash)"
_overspill() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" opts=""
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "{" ".join(verbs)} --help --version" -- "$cur"))
        return
    fi
    case "${{COMP_WORDS[1]}}" in
{cases}
    esac
    COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
}}
complete -o default -F _overspill overspill
"""


def zsh(parser: argparse.ArgumentParser) -> str:
    return (
        '# overspill completion for zsh: eval "$(overspill completion zsh)"\n'
        "autoload -U +X bashcompinit && bashcompinit\n" + bash(parser).split("\n", 1)[1]
    )


def fish(parser: argparse.ArgumentParser) -> str:
    lines = ["# overspill completion for fish: overspill completion fish | source"]
    verbs = _verbs(parser)
    lines.append(f"complete -c overspill -f -n __fish_use_subcommand -a '{' '.join(verbs)}'")
    for verb, words in verbs.items():
        for w in words:
            if w.startswith("--"):
                lines.append(
                    f"complete -c overspill -n '__fish_seen_subcommand_from {verb}' -l {w[2:]}"
                )
            else:
                lines.append(
                    f"complete -c overspill -f -n '__fish_seen_subcommand_from {verb}' -a {w}"
                )
    return "\n".join(lines) + "\n"


SHELLS = {"bash": bash, "zsh": zsh, "fish": fish}
