"""Redaction: every secret masked at its own length, wherever the chunking cuts it.

The secrets are generated here in the public formats, never real. A stream is
checked the way a reader meets it: the bytes that came out are the bytes that
went in, except that every byte of each secret after its public prefix is
``*`` (line ends kept), so sizes and offsets are unchanged.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from overspill.artifacts.errors import ConfigurationError
from overspill.artifacts.queries import LineQuery
from overspill.artifacts.store import ArtifactStore
from overspill.shell import ExecRequest, Executor, ShellSettings, StoreSink
from overspill.shell.environment import child_environment, known_secrets, looks_like_credential
from overspill.shell.redact import RULE_NAMES, StreamRedactor, redact_once, ruleset_for
from overspill.shell.redact.prefilter import HyperscanPrefilter, Re2Prefilter, StdlibPrefilter
from overspill.shell.redact.rules import WORD
from overspill.shell.redact.stream import RuleSet
from tests.helpers import ALICE

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"


def _s(rng: random.Random, chars: str, n: int) -> str:
    return "".join(rng.choice(chars) for _ in range(n))


# Each maker gives (before, secret, after, kept): the secret's first ``kept``
# characters are its public prefix, left readable; the rest must be masked.
Maker = Callable[[random.Random], tuple[str, str, str, int]]


def _pem(rng: random.Random, size: int = 1190) -> tuple[str, str, str, int]:
    body = base64.b64encode(rng.randbytes(size)).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    kind = rng.choice(["RSA ", "EC ", "OPENSSH ", ""])
    return (
        f"-----BEGIN {kind}PRIVATE KEY-----",
        f"\n{lines}\n",
        f"-----END {kind}PRIVATE KEY-----\n",
        0,
    )


MAKERS: dict[str, Maker] = {
    "private_key": _pem,
    "aws_access_key_id": lambda r: ("id=", r.choice(["AKIA", "ASIA"]) + _s(r, UPPER, 16), "\n", 4),
    "aws_secret_access_key": lambda r: ("aws_secret_access_key = ", _s(r, B64, 40), "\n", 0),
    "github_token": lambda r: (
        "token ",
        "gh" + r.choice("pousr") + "_" + _s(r, ALNUM, 36),
        " ok\n",
        4,
    ),
    "github_pat": lambda r: ("GH=", "github_pat_" + _s(r, ALNUM + "_", 82), "\n", 11),
    "gitlab_token": lambda r: ("'", "glpat-" + _s(r, ALNUM + "_-", 20), "'\n", 6),
    "slack_token": lambda r: (
        "t=",
        "xoxb-" + _s(r, string.digits, 12) + "-" + _s(r, ALNUM, 24),
        "\n",
        5,
    ),
    "slack_webhook": lambda r: (
        "POST https://hooks.slack.com/services/",
        "T" + _s(r, UPPER, 8) + "/B" + _s(r, UPPER, 10) + "/" + _s(r, ALNUM, 24),
        " 200\n",
        0,
    ),
    "stripe_live_key": lambda r: ("key: ", "sk_live_" + _s(r, ALNUM, 24), "\n", 8),
    "google_api_key": lambda r: ("?key=", "AIza" + _s(r, ALNUM + "_-", 35), "&q=1\n", 4),
    "anthropic_key": lambda r: ("x-api-key: ", "sk-ant-api03-" + _s(r, ALNUM + "_-", 93), "\n", 7),
    "openai_key": lambda r: ("OPENAI=", "sk-proj-" + _s(r, ALNUM + "_-", 48), "\n", 3),
    "npm_token": lambda r: (
        "//registry.npmjs.org/:_authToken=",
        "npm_" + _s(r, ALNUM, 36),
        "\n",
        4,
    ),
    "pypi_token": lambda r: (
        "password = ",
        "pypi-AgEIcHlwaS5vcmc" + _s(r, ALNUM + "_-", 120),
        "\n",
        5,
    ),
    "huggingface_token": lambda r: ("HF ", "hf_" + _s(r, string.ascii_letters, 34), "\n", 3),
    "jwt": lambda r: (
        "cookie: session=",
        "eyJ" + _s(r, ALNUM, 30) + ".eyJ" + _s(r, ALNUM + "_-", 60) + "." + _s(r, ALNUM + "_-", 43),
        "; Path=/\n",
        3,
    ),
    "url_password": lambda r: (
        "connecting to postgres://app_user:",
        _s(r, ALNUM + "!$%^&*()-_=+", 18),
        "@db.internal:5432/app\n",
        0,
    ),
    "authorization_header": lambda r: (
        "> Authorization: Bearer ",
        _s(r, ALNUM + "._-", 40),
        "\n",
        0,
    ),
}


def test_every_rule_has_a_maker_here() -> None:
    assert sorted(MAKERS) == sorted(RULE_NAMES)


def _log_line(rng: random.Random, n: int) -> str:
    """Ordinary output around the secrets: nothing in it is one."""
    return rng.choice(
        [
            f"{n:06d} INFO request id={uuid.UUID(int=rng.getrandbits(128))} took {rng.random():.3f}s\n",
            f"commit {rng.randbytes(20).hex()} built in {rng.randint(1, 99)}s\n",
            f"PASSED tests/test_{n}.py::test_case_{rng.randint(0, 999)}\n",
            f"GET https://example.com/api/v1/items/{n}?page=2 200\n",
            f"sha256:{hashlib.sha256(str(n).encode()).hexdigest()} disk-usage task-{n}\n",
            "blob " + base64.b64encode(rng.randbytes(45)).decode() + "\n",
        ]
    )


def _feed(redactor: StreamRedactor, data: bytes, cuts: list[int]) -> bytes:
    out = bytearray()
    last = 0
    for cut in [*cuts, len(data)]:
        for piece in redactor.feed(memoryview(data)[last:cut]):
            out += piece
        last = cut
    out += redactor.finish()
    return bytes(out)


def _expected(before: bytes, secret: bytes, kept: int, after: bytes) -> bytes:
    masked = secret[:kept] + bytes(b if b in (10, 13) else 42 for b in secret[kept:])
    return before + masked + after


def _corpus(rng: random.Random, n: int) -> Iterator[tuple[str, bytes, int, bytes, bytes]]:
    """(rule, document, secret offset, secret, expected): n secrets, every rule."""
    names = sorted(MAKERS)
    for i in range(n):
        rule = names[i % len(names)]
        before, secret, after, kept = MAKERS[rule](rng)
        prefix = "".join(_log_line(rng, i * 10 + k) for k in range(rng.randint(0, 6)))
        suffix = "".join(_log_line(rng, i * 10 + k) for k in range(3))
        head = (prefix + before).encode()
        doc = head + secret.encode() + (after + suffix).encode()
        expected = _expected(head, secret.encode(), kept, (after + suffix).encode())
        yield rule, doc, len(head), secret.encode(), expected


@pytest.mark.parametrize(
    ("fast", "secrets"), [(False, 1000), (True, 300)], ids=["first-bytes-engine", "fast-engine"]
)
def test_a_thousand_secrets_are_masked_wherever_a_chunk_boundary_cuts_them(
    fast: bool, secrets: int
) -> None:
    """Every rule, 1,000 generated secrets, a boundary at every position inside
    each (and just outside), chunks of 1-4 KiB: all masked, nothing else changed.
    Both engines a stream uses: the one it starts on, and the one past LARGE
    bytes (Hyperscan where installed, with its narrowed triggers; 300 secrets,
    every rule many times over, as the engines share all but the trigger scan)."""
    rng = random.Random(24)
    rules = ruleset_for()
    failures: list[str] = []
    checked = 0
    for rule, doc, at, secret, expected in _corpus(rng, secrets):
        size = 1024 * (1 + checked % 4)
        for inside in range(-1, len(secret) + 2):
            cut = at + inside
            if not 0 < cut < len(doc):
                continue
            # Chunks of ``size`` laid so that one boundary falls at ``cut``.
            cuts = sorted({c for c in range(cut % size, len(doc), size) if c > 0} | {cut})
            r = StreamRedactor(rules, fast=fast)
            got = _feed(r, doc, cuts)
            checked += 1
            if got != expected:
                failures.append(f"{rule} cut at {inside}: {got[at - 8 : at + len(secret) + 8]!r}")
            elif r.manifest.total != 1 or r.manifest.counts.get(rule) != 1:
                # Each finding counts once, wherever the seam cut it.
                failures.append(f"{rule} cut at {inside}: counted {r.manifest.counts}")
    assert not failures, failures[:5]
    assert checked > 50 * secrets


@pytest.mark.parametrize("size", [1024, 2048, 3072, 4096])
def test_a_private_key_block_is_masked_wherever_a_chunk_boundary_falls(size: int) -> None:
    rng = random.Random(size)
    before, secret, after, kept = _pem(rng, 2400)  # a 4096-bit key's size
    head = ("building...\n" * 50 + before).encode()
    doc = head + secret.encode() + after.encode()
    expected = _expected(head, secret.encode(), kept, after.encode())
    for shift in range(0, size, 7):
        cuts = list(range(shift or size, len(doc), size))
        r = StreamRedactor(ruleset_for())
        assert _feed(r, doc, cuts) == expected, shift
        assert r.manifest.counts == {"private_key": 1}


def test_a_key_whose_end_never_comes_is_masked_to_the_end_of_the_stream() -> None:
    doc = b"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nMIIEvQ"
    r = StreamRedactor(ruleset_for())
    out = _feed(r, doc, [30, 50])
    assert out == b"-----BEGIN PRIVATE KEY-----" + b"\n" + b"*" * 32 + b"\n" + b"*" * 6


def test_ordinary_logs_have_no_false_positive() -> None:
    rng = random.Random(7)
    data = "".join(_log_line(rng, n) for n in range(60_000)).encode()  # ~4 MB
    r = StreamRedactor(ruleset_for())
    out = _feed(r, data, list(range(65536, len(data), 65536)))
    assert r.manifest.total == 0 and out == data


def test_a_live_reader_waits_for_nothing_but_a_possible_secret() -> None:
    r = StreamRedactor(ruleset_for())
    assert b"".join(r.feed(b"one\n")) == b"one\n"
    assert b"".join(r.feed(b"two gh")) == b"two "  # "gh" may begin a token
    assert b"".join(r.feed(b"ost\n")) == b"ghost\n"


def test_the_manifest_says_where_and_which_never_the_value() -> None:
    token = "ghp_" + "Ab3" * 12
    text = f"a {token}\nb postgres://u:hunter2hunter2@h/db\n"
    out, manifest = redact_once(text, ruleset_for())
    data = manifest.as_json()
    assert data["rules"] == {"github_token": 1, "url_password": 1}
    where = text.index("hunter2")
    assert data["spans"] == [[2, 40, "github_token"], [where, 14, "url_password"]]
    assert token[4:] not in str(data) and "hunter2" not in str(data) and "hunter2" not in out
    assert (
        len(out) == len(text)
        and manifest.summary() == "2 secrets redacted (github_token, url_password)"
    )


def test_known_values_are_masked_plain_url_encoded_and_in_base64() -> None:
    value = "s3cr3t/v@lue+with=chars"
    rules = ruleset_for([("DB_PASS", value)])
    for shift in range(3):
        encoded = base64.b64encode(b"x" * shift + value.encode() + b"tail").decode()
        for text in (f"v={value}\n", f"q={quote(value, safe='')}&x\n", f"b64 {encoded}\n"):
            out, manifest = redact_once(text, rules)
            assert manifest.counts.get("env:DB_PASS") == 1, text
            assert value not in out and quote(value, safe="") not in out
            # What is left of a base64 form decodes to no part of the value longer than 2 bytes.
            assert len(out) == len(text)


def test_a_rule_switched_off_is_not_applied_and_an_unknown_one_is_refused() -> None:
    token = "ghp_" + "x" * 36
    out, _ = redact_once(token, ruleset_for(disabled=["github_token"]))
    assert out == token
    with pytest.raises(ConfigurationError, match="no rule 'githubtoken'"):
        ruleset_for(disabled=["githubtoken"])


def test_an_admins_own_pattern_is_masked_even_across_a_boundary() -> None:
    rules = ruleset_for(patterns=[r"ACME-([0-9]{12})"])
    doc = b"x" * 5000 + b" ACME-123456789012 " + b"y" * 100
    for cut in range(5000, 5020):
        r = StreamRedactor(rules)
        out = _feed(r, doc, [cut])
        assert out == doc.replace(b"123456789012", b"*" * 12), cut
    with pytest.raises(ConfigurationError, match="OVERSPILL_REDACT_PATTERNS"):
        ruleset_for(patterns=["(unclosed"])


@pytest.mark.parametrize("engine", [StdlibPrefilter, Re2Prefilter, HyperscanPrefilter])
def test_every_prefilter_finds_every_trigger(engine: type) -> None:
    if engine is HyperscanPrefilter:
        pytest.importorskip("hyperscan")
    rules: RuleSet = ruleset_for([("API_KEY", "known-value-123")])
    rng = random.Random(3)
    parts = [_log_line(rng, i) for i in range(200)]
    for i, lit in enumerate(rules.literals):
        parts.insert(rng.randint(0, len(parts)), f"<{lit.decode()}>{i}\n")
    data = "".join(parts).encode()
    word = [False] * len(rules.literals) if engine is StdlibPrefilter else rules.word_start
    want = {
        (m, i)
        for i, lit in enumerate(rules.literals)
        for m in _all(data, lit)
        # The fast engines skip a token's trigger inside a word ("task-" is no "sk-").
        if not (word[i] and m > 0 and data[m - 1] in WORD)
    }
    assert any(data[m - 1] in WORD for m in _all(data, b"sk-"))  # there are such words
    pre = engine(rules.literals) if engine is StdlibPrefilter else engine(rules.literals, word)
    got = set(pre.find(data))
    assert {pos for pos, _ in want} <= {pos for pos, _ in got}
    assert got <= want


def test_the_fast_engine_reports_a_url_trigger_only_where_a_password_may_be() -> None:
    """``://`` is narrowed to its rule's candidate: reported where a password can
    follow, or in the last bytes where one may still be arriving; a log of
    URLs without passwords costs no callback per URL."""
    pytest.importorskip("hyperscan")
    rules = ruleset_for()
    url = rules.literals.index(b"://")
    reach = rules.rules[rules.owners[url][0]].max_len
    plain = b"".join(b"GET https://example.com/items/%d 200\n" % i for i in range(400))
    secret = b"fetch https://deploy:hunter2-very-secret@example.com/x\n"
    data = plain + secret + plain + b"tail https://user:pa"  # the last: not arrived whole
    pre = HyperscanPrefilter(rules.literals, rules.word_start, rules.narrow)
    got = sorted(pos for pos, i in pre.find(data) if i == url)
    at_secret = len(plain) + secret.index(b"://")
    near_end = [m for m in _all(data, b"://") if m >= len(data) - reach]
    assert got == sorted({at_secret, *near_end})
    assert len(near_end) < 20 < len(list(_all(data, b"://")))
    assert pre.any(plain[-200:] + b"x" * reach) is False
    assert pre.any(plain[:200]) is True  # a bare trigger near the end may grow


def _all(data: bytes, lit: bytes) -> Iterator[int]:
    i = data.find(lit)
    while i >= 0:
        yield i
        i = data.find(lit, i + 1)


# -- the environment -------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["MY_PASSWD", "API_CREDENTIALS", "SSH_PRIVATE", "AUTH", "NPM_AUTH", "GH_PAT", "DB_PASS",
     "SENTRY_DSN", "COOKIE", "SLACK_WEBHOOK_URL", "aws_secret_key", "Github_Token", "PASSWORD"],
)  # fmt: skip
def test_credential_shaped_names_never_reach_the_child(name: str) -> None:
    assert looks_like_credential(name)
    assert name not in child_environment({name: "v", "PATH": "/bin"}, {}, "OVERSPILL_")


@pytest.mark.parametrize("name", ["PATH", "PWD", "OLDPWD", "HOME", "LANG", "COMPASS", "PATTERN"])
def test_ordinary_names_reach_the_child(name: str) -> None:
    assert not looks_like_credential(name, "/usr/bin")


def test_a_url_with_a_password_is_a_credential_whatever_its_name() -> None:
    parent = {"DATABASE_URL": "postgres://u:pw@db/app", "HTTP_PROXY": "http://me:pass@proxy:3128",
              "HOMEPAGE": "https://example.com/a:b", "PLAIN_URL": "https://user@example.com"}  # fmt: skip
    env = child_environment(parent, {}, "OVERSPILL_")
    assert "DATABASE_URL" not in env and "HTTP_PROXY" not in env
    assert env["HOMEPAGE"] == parent["HOMEPAGE"] and env["PLAIN_URL"] == parent["PLAIN_URL"]
    assert [k for k, _ in known_secrets(parent, {"DEPLOY_TOKEN": "on-purpose-1"})] == [
        "DATABASE_URL", "DEPLOY_TOKEN", "HTTP_PROXY"]  # fmt: skip


# -- through the executor: artifact, spill file, tail and command --------------------


def test_a_scrubbed_value_printed_anyway_is_masked_everywhere_it_is_kept(
    store: ArtifactStore, tmp_path: Path
) -> None:
    secret = "pw-" + "Zq9" * 10
    token = "ghp_" + "T0k" * 12
    file = tmp_path / "config.txt"
    file.write_text(
        f"password={secret}\n"
        f"encoded={base64.b64encode(secret.encode()).decode()}\n"
        f"url=https://u:{quote(secret, safe='')}@h/\n"
    )
    parent = {"MY_PASSWD": secret, "PATH": "/usr/bin:/bin"}
    settings = ShellSettings(grace_ms=300, legacy_spill=True, max_output_bytes=4000)
    executor = Executor(settings, StoreSink(store, ALICE), parent_env=parent)
    command = f"seq 1 3000; cat {file}; echo {token}; seq 1 200"
    r = executor.run(ExecRequest(command=command))
    art = r.stdout.artifact
    assert art is not None and art.state == "complete"
    stored = store.read_bytes(ALICE, art.id, 0, art.size_bytes)
    spill = Path(r.stdout.spill_path or "").read_bytes()
    info = store.get(ALICE, art.id)
    printed = (
        "".join(f"{i}\n" for i in range(1, 3001)) + file.read_text() + token + "\n"
        + "".join(f"{i}\n" for i in range(1, 201))
    ).encode()  # fmt: skip
    assert len(stored) == len(printed) == art.total_bytes and stored == spill
    for kept in (stored.decode(), r.text, info.source["command"]):
        assert secret not in kept and token[4:] not in kept
        assert base64.b64encode(secret.encode()).decode()[4:-4] not in kept
    assert "ghp_" + "*" * 36 in r.text
    redactions = info.source["redactions"]
    # The password in the URL is found by two rules; it counts once, for the first.
    assert redactions["rules"] == {"env:MY_PASSWD": 2, "github_token": 1, "url_password": 1}
    summary = "4 secrets redacted (env:MY_PASSWD, github_token, url_password)"
    assert r.stdout.redacted == summary and f"{summary}, each masked" in r.text
    # Offsets are unchanged: line 3003 is where it was printed, masked.
    line = store.lines(ALICE, art.id, LineQuery(start=3003, count=1)).lines[0]
    assert line.text == "url=https://u:" + "*" * len(quote(secret, safe="")) + "@h/"


def test_a_whole_output_with_a_secret_says_it_was_masked() -> None:
    executor = Executor(ShellSettings(grace_ms=300), parent_env={})
    r = executor.run(ExecRequest(command="echo AKIAABCDEFGHIJKLMNOP"))
    assert r.text == (
        "AKIA****************\n[1 secret redacted (aws_access_key_id), "
        "each masked with * at its own length (offsets unchanged)]"
    )


def test_redaction_off_keeps_the_bytes_as_printed() -> None:
    executor = Executor(ShellSettings(grace_ms=300, redact=False), parent_env={})
    assert executor.run(ExecRequest(command="echo AKIAABCDEFGHIJKLMNOP")).text == (
        "AKIAABCDEFGHIJKLMNOP\n"
    )


def test_redaction_off_is_recorded_on_the_artifact_and_audited(store: ArtifactStore) -> None:
    settings = ShellSettings(grace_ms=300, redact=False, max_output_bytes=1000)
    executor = Executor(settings, StoreSink(store, ALICE), parent_env={})
    r = executor.run(ExecRequest(command="seq 1 1000; echo AKIAABCDEFGHIJKLMNOP"))
    art = r.stdout.artifact
    assert art is not None
    assert store.read_bytes(ALICE, art.id, art.size_bytes - 21, art.size_bytes) == (
        b"AKIAABCDEFGHIJKLMNOP\n"
    )
    assert store.get(ALICE, art.id).source["redactions"] == {"off": True}
    events = store.audit_log(artifact_id=art.id, action="unredacted")
    assert [e.owner for e in events] == [ALICE.name]


def test_what_was_masked_is_audited_by_rule_without_a_value(store: ArtifactStore) -> None:
    token = "glpat-" + "Q" * 20
    executor = Executor(
        ShellSettings(grace_ms=300, max_output_bytes=1000), StoreSink(store, ALICE), parent_env={}
    )
    r = executor.run(ExecRequest(command=f"seq 1 1000; echo {token}"))
    assert r.stdout.artifact is not None
    (event,) = store.audit_log(artifact_id=r.stdout.artifact.id, action="redact")
    assert event.details == {"count": 1, "rules": {"gitlab_token": 1}}
    assert token not in str(event) and token not in r.text


def test_only_an_admins_policy_lets_an_owner_store_output_unmasked(tmp_path: Path) -> None:
    """``OVERSPILL_REDACT=off`` alone masks anyway and says why; after an admin's
    ``--redact off`` for the owner it stores the bytes as printed, and both the
    policy change and each unmasked artifact are in the audit log."""
    import json

    from tests.helpers import cli_env, run_cli

    env = cli_env(
        OVERSPILL_HOME=str(tmp_path / "home"),
        OVERSPILL_LOCAL_SERVER="off",
        OVERSPILL_OWNER="agent:raw",
        OVERSPILL_MAX_OUTPUT_BYTES="1000",
    )
    command = "seq 1 500; echo AKIAABCDEFGHIJKLMNOP"

    def run(**extra: str) -> tuple[dict[str, object], str]:
        out = run_cli({**env, **extra}, "run", "--json", "--", command)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["stdout"], out.stderr.decode()

    masked, warning = run(OVERSPILL_REDACT="off")
    assert "AKIA****************" in str(masked["text"])
    assert warning == (
        "overspill: warning: redaction stays on: no admin policy turns it off for agent:raw\n"
    )

    done = run_cli(env, "retention", "set", "--owner", "agent:raw", "--redact", "off")
    assert done.returncode == 0, done.stderr
    assert "redaction off" in done.stdout.decode()
    raw, warning = run(OVERSPILL_REDACT="off")
    assert "AKIAABCDEFGHIJKLMNOP" in str(raw["text"]) and warning == ""
    art = raw["artifact"]
    assert isinstance(art, dict)
    audit = run_cli(env, "audit", "--artifact", str(art["id"]), "--json")
    assert '"unredacted"' in audit.stdout.decode(), audit.stderr
    policy = run_cli(env, "audit", "--json")
    assert '"redact": false' in policy.stdout.decode()


def test_the_redaction_switch_inherits_owner_over_global_over_on(store: ArtifactStore) -> None:
    from overspill.artifacts.catalog.policies import PolicySpec
    from overspill.artifacts.records import Principal

    admin = Principal(name="root", role="admin")
    assert store.policies.effective(ALICE.name).redact is True
    store.policies.set(admin, PolicySpec(redact=False))
    assert store.policies.effective(ALICE.name).redact is False
    store.policies.set(admin, PolicySpec(redact=True), ALICE.name)
    assert store.policies.effective(ALICE.name).redact is True
    assert store.policies.effective("agent:other").redact is False
    (event,) = store.audit_log(owner=ALICE.name, action="policy")
    assert event.details["redact"] is True


@pytest.mark.parametrize("copies", [1, 25])
def test_each_secret_is_counted_once_in_the_view_and_on_the_artifact(
    tmp_path: Path, copies: int
) -> None:
    """A log with one secret of every rule, and a small file with two secrets on
    one line, printed ``copies`` times by a real command: the model's view and
    the stored artifact both count every secret exactly once (the fault battery
    saw 659 for 650 and 26 for 50)."""
    import re
    import subprocess
    import sys

    from tests.helpers import cli_env, run_cli

    rng = random.Random(7)
    lines = [f"plain log line {i} with nothing secret in it" for i in range(400)]
    for k, rule in enumerate(sorted(MAKERS)):
        before, secret, after, _ = MAKERS[rule](rng)
        lines.insert(3 + k * 21, f"{before}{secret}{after}")
    (tmp_path / "log.txt").write_text("\n".join(lines) + "\n")
    b1, s1, a1, _ = MAKERS["github_token"](rng)
    b2, s2, a2, _ = MAKERS["openai_key"](rng)
    (tmp_path / "two.txt").write_text(f"{b1}{s1}{a1} and {b2}{s2}{a2}\n")
    env = cli_env(OVERSPILL_HOME=tmp_path / "home", OVERSPILL_MAX_OUTPUT_BYTES=2000)
    for name, each in (("log.txt", len(MAKERS)), ("two.txt", 2)):
        command = f"for i in $(seq {copies}); do cat {tmp_path / name}; done"
        out = subprocess.run(
            [sys.executable, "-m", "overspill.api.cli", "run", "--", command],
            capture_output=True,
            env=env,
            check=True,
        ).stdout.decode()
        want = each * copies
        assert re.findall(r"(\d+) secrets? redacted", out) == [str(want)], (name, out[-600:])
        art = re.search(r"artifact (art_\w{26})", out)
        if art is not None:
            info = run_cli(env, "info", art.group(1)).stdout.decode()
            assert f"redacted: {want} secret" in info, info
