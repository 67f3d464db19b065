"""Every writer masks with the admin's redaction: the custom patterns apply and a
rule switched off stays off, whichever way the bytes arrive -- a command's
output, a saved result (HTTP, MCP, in-process with its legacy file), an upload
(``PUT /content``, ``overspill put``).

Before one ``Redaction`` object was handed to every writer, saved results used
the built-in rules alone and ``put`` masked nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from overspill.api.agent.mcp_stdio import initialize_request
from overspill.api.agent.result_saver import saver_for
from overspill.api.client.in_process import InProcessClient
from overspill.api.server.app import create_app
from overspill.api.settings import ClientSettings, ServerSettings, Settings
from overspill.artifacts.catalog.tokens import NewToken
from overspill.artifacts.records import Principal
from overspill.artifacts.store import ArtifactStore
from overspill.shell import ExecRequest, Executor, ShellSettings, StoreSink
from overspill.shell.redact.policy import Redaction
from tests.helpers import cli_env, mcp_answers, run_cli

pytestmark = pytest.mark.one_store

CUSTOM = "acme-7734219"  # matched only by the admin's own pattern
GITHUB = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"  # the built-in github_token rule
CONTENT = f"deploy with {CUSTOM}\ntoken {GITHUB} in the log\n" * 3
SETTINGS = {"redact_patterns": r"acme-[0-9]{7}", "redact_disable": "github_token"}
ENV = {"OVERSPILL_REDACT_PATTERNS": r"acme-[0-9]{7}", "OVERSPILL_REDACT_DISABLE": "github_token"}
AGENT = Principal(name="agent:writer", role="agent")


def assert_masked_as_the_admin_said(stored: bytes) -> None:
    """The admin's pattern masked at its own length; the switched-off rule not applied."""
    text = stored.decode()
    assert CUSTOM not in text
    assert text.count("*" * len(CUSTOM)) == 3
    assert text.count(GITHUB) == 3
    assert len(stored) == len(CONTENT.encode())


def _settings(store: ArtifactStore) -> Settings:
    return Settings(
        store=store.settings,
        shell=ShellSettings(**SETTINGS),
        client=ClientSettings(),
        server=ServerSettings(),
    )


def _bytes(store: ArtifactStore, artifact_id: str) -> bytes:
    _, content = store.open_content(AGENT, artifact_id)
    return b"".join(content.iter_range(0, content.size))


def test_a_commands_output_is_masked_with_the_admins_rules(store: ArtifactStore) -> None:
    executor = Executor(ShellSettings(**SETTINGS, max_output_bytes=40), StoreSink(store, AGENT))
    result = executor.run(ExecRequest(command="cat", stdin=CONTENT.encode()))
    assert result.stdout.artifact is not None
    assert_masked_as_the_admin_said(_bytes(store, result.stdout.artifact.id))


def test_a_result_saved_over_http_is_masked_with_the_admins_rules(
    store: ArtifactStore,
) -> None:
    app = create_app(store, _settings(store))
    token = store.tokens.create(NewToken(principal=AGENT.name, role=AGENT.role)).token
    with TestClient(app) as client:
        r = client.post(
            "/v1/results?tool=web_fetch",
            content=CONTENT.encode(),
            headers={"Authorization": f"Bearer {token}"},
        )
    assert r.status_code == 201, r.text
    assert_masked_as_the_admin_said(_bytes(store, r.json()["id"]))
    assert CUSTOM not in r.json()["preview"]


def test_an_upload_is_masked_with_the_admins_rules(store: ArtifactStore) -> None:
    app = create_app(store, _settings(store))
    headers = {
        "Authorization": f"Bearer {store.tokens.create(NewToken(principal=AGENT.name, role=AGENT.role)).token}"
    }
    with TestClient(app) as client:
        created = client.post("/v1/artifacts", json={"name": "upload.log"}, headers=headers)
        art = created.json()["id"]
        # In pieces that cut both secrets: the mask holds across a chunk boundary.
        data = CONTENT.encode()
        r = client.put(
            f"/v1/artifacts/{art}/content", content=iter([data[:20], data[20:]]), headers=headers
        )
        assert r.status_code == 200, r.text
        assert r.json()["source"]["redactions"]["count"] == 3
    assert_masked_as_the_admin_said(_bytes(store, art))


def test_the_in_process_saver_masks_the_store_and_the_legacy_file_alike(
    store: ArtifactStore, tmp_path: Path
) -> None:
    shell = ShellSettings(**SETTINGS, result_spill_dir=str(tmp_path / "results"))
    backend = InProcessClient(store, AGENT, redaction=Redaction.from_settings(shell))
    saved = saver_for(backend, shell, session_id="s1", legacy=True).save(
        CONTENT + "x" * 60_000, tool="web_fetch"
    )
    assert saved.id is not None and saved.legacy_path is not None
    assert_masked_as_the_admin_said(_bytes(store, saved.id)[: len(CONTENT)])
    assert_masked_as_the_admin_said(Path(saved.legacy_path).read_bytes()[: len(CONTENT)])


@pytest.mark.slow
def test_put_masks_with_the_admins_rules(tmp_path: Path) -> None:
    env = cli_env(OVERSPILL_HOME=tmp_path / "home", **ENV)
    put = run_cli(env, "put", "--name", "pasted.log", stdin=CONTENT.encode())
    assert put.returncode == 0, put.stderr
    (art,) = re.findall(rb"art_\w{26}", put.stdout + put.stderr)
    cat = run_cli(env, "cat", art.decode())
    assert_masked_as_the_admin_said(cat.stdout)


@pytest.mark.slow
def test_put_masks_a_github_token_by_default(tmp_path: Path) -> None:
    env = cli_env(OVERSPILL_HOME=tmp_path / "home")
    put = run_cli(env, "put", stdin=f"export GITHUB_TOKEN={GITHUB}\n".encode())
    (art,) = re.findall(rb"art_\w{26}", put.stdout + put.stderr)
    stored = run_cli(env, "cat", art.decode()).stdout
    assert GITHUB.encode() not in stored and b"ghp_" + b"*" * (len(GITHUB) - 4) in stored


@pytest.mark.slow
def test_artifact_save_over_mcp_masks_with_the_admins_rules(tmp_path: Path) -> None:

    env = cli_env(OVERSPILL_HOME=tmp_path / "home", OVERSPILL_OWNER=AGENT.name, **ENV)
    env["OVERSPILL_RESULT_SPILL_DIR"] = str(tmp_path / "results")
    requests = [
        initialize_request("t"),
        {
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "artifact_save",
                "arguments": {"content": CONTENT + "y" * 60_000, "tool": "web_fetch"},
            },
        },
    ]
    answers = mcp_answers(env, requests)
    text = answers[1]["result"]["content"][0]["text"]
    (art,) = re.findall(r"\[saved as (art_\w+):", text)
    (legacy,) = re.findall(r"stored at: (\S+)\. ", text)
    assert CUSTOM not in text
    assert_masked_as_the_admin_said(Path(legacy).read_bytes()[: len(CONTENT)])
    stored = run_cli(env, "cat", art).stdout
    assert_masked_as_the_admin_said(stored[: len(CONTENT)])
