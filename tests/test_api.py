"""The HTTP API in-process, on every backend pair."""

from __future__ import annotations

import hashlib
import re

import pytest

from overspill.artifacts.catalog.tokens import NewToken
from overspill.artifacts.store import ArtifactStore
from tests.api_helpers import Api, make_api

ZERO_ID = "art_" + "0" * 26


@pytest.fixture
def api(store: ArtifactStore) -> Api:
    return make_api(store)


def _upload(api: Api, data: bytes, token: str | None = None, **fields: object) -> str:
    h = api.h(token or api.alice)
    art = api.client.post("/v1/artifacts", json=fields, headers=h).json()["id"]
    r = api.client.put(f"/v1/artifacts/{art}/content", content=data, headers=h)
    assert r.status_code == 200, r.text
    return str(art)


def test_create_upload_and_download_round_trip(api: Api) -> None:
    data = bytes(range(256)) * 4000
    art = _upload(api, data, name="blob", media_type="application/octet-stream")
    info = api.client.get(f"/v1/artifacts/{art}", headers=api.h(api.alice)).json()
    assert info["state"] == "complete" and info["size_bytes"] == len(data)
    assert info["sha256"] == hashlib.sha256(data).hexdigest()
    r = api.client.get(f"/v1/artifacts/{art}/content", headers=api.h(api.alice))
    assert r.status_code == 200 and r.content == data
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.headers["content-disposition"] == f'attachment; filename="{art}.bin"'
    assert r.headers["etag"] == f'"{info["sha256"]}"'


@pytest.mark.parametrize(
    ("header", "status", "span"),
    [
        ("bytes=0-9", 206, (0, 10)),
        ("bytes=100-", 206, (100, 1000)),
        ("bytes=-7", 206, (993, 1000)),
        ("bytes=-5000", 206, (0, 1000)),
        ("bytes=990-5000", 206, (990, 1000)),
        ("bytes=0-1,5-6", 200, (0, 1000)),
        ("items=0-1", 200, (0, 1000)),
        ("bytes=5-2", 200, (0, 1000)),
    ],
)
def test_ranges(api: Api, header: str, status: int, span: tuple[int, int]) -> None:
    data = bytes(i % 251 for i in range(1000))
    art = _upload(api, data)
    r = api.client.get(
        f"/v1/artifacts/{art}/content", headers={**api.h(api.alice), "Range": header}
    )
    assert r.status_code == status
    assert r.content == data[span[0] : span[1]]
    if status == 206:
        assert r.headers["content-range"] == f"bytes {span[0]}-{span[1] - 1}/1000"


@pytest.mark.parametrize("header", ["bytes=1000-", "bytes=5000-6000", "bytes=-0"])
def test_unsatisfiable_ranges_are_416(api: Api, header: str) -> None:
    art = _upload(api, b"x" * 1000)
    r = api.client.get(
        f"/v1/artifacts/{art}/content", headers={**api.h(api.alice), "Range": header}
    )
    assert r.status_code == 416 and r.headers["content-range"] == "bytes */1000"
    assert r.json()["error"]["code"] == "range_not_satisfiable"


def test_if_none_match_answers_304(api: Api) -> None:
    art = _upload(api, b"cache me")
    etag = api.client.get(f"/v1/artifacts/{art}/content", headers=api.h(api.alice)).headers["etag"]
    r = api.client.get(
        f"/v1/artifacts/{art}/content", headers={**api.h(api.alice), "If-None-Match": etag}
    )
    assert r.status_code == 304


def test_html_content_is_served_as_inert_text(api: Api) -> None:
    art = _upload(api, b"<script>alert(1)</script>", media_type="text/html")
    r = api.client.get(f"/v1/artifacts/{art}/content", headers=api.h(api.alice))
    assert r.headers["content-type"] == "text/plain; charset=utf-8"
    assert "sandbox" in r.headers["content-security-policy"]


def test_append_checks_the_offset_and_complete_computes_the_hash(api: Api) -> None:
    h = api.h(api.alice)
    art = api.client.post("/v1/artifacts", json={"kind": "log"}, headers=h).json()["id"]
    assert (
        api.client.patch(
            f"/v1/artifacts/{art}/content?offset=0", content=b"hello ", headers=h
        ).status_code
        == 200
    )
    r = api.client.patch(f"/v1/artifacts/{art}/content?offset=0", content=b"again", headers=h)
    assert r.status_code == 409
    assert r.json()["error"] == {
        "code": "offset_conflict",
        "current_size": 6,
        "message": r.json()["error"]["message"],
    }
    assert (
        api.client.patch(
            f"/v1/artifacts/{art}/content?offset=6", content=b"world", headers=h
        ).json()["size_bytes"]
        == 11
    )
    live = api.client.get(f"/v1/artifacts/{art}/text", headers=h).json()
    assert live["text"] == "hello world" and not live["complete"]
    done = api.client.post(
        f"/v1/artifacts/{art}/complete", json={"source": {"exit_code": 0}}, headers=h
    ).json()
    assert (
        done["state"] == "complete" and done["sha256"] == hashlib.sha256(b"hello world").hexdigest()
    )
    assert done["source"]["exit_code"] == 0
    again = api.client.post(f"/v1/artifacts/{art}/complete", json={}, headers=h)
    assert again.status_code == 409


def test_lines_split_across_appends_are_numbered_as_one_artifact(api: Api) -> None:
    h = api.h(api.alice)
    art = api.client.post("/v1/artifacts", json={}, headers=h).json()["id"]
    for offset, part in ((0, b"one\ntw"), (6, b"o\nthree"), (13, b"\nfour")):
        r = api.client.patch(
            f"/v1/artifacts/{art}/content?offset={offset}", content=part, headers=h
        )
        assert r.status_code == 200, r.text
    lines = api.client.get(f"/v1/artifacts/{art}/lines?start=2&count=3", headers=h).json()
    assert [ln["text"] for ln in lines["lines"]] == ["two", "three", "four"]
    assert lines["line_count"] == 4


def test_complete_with_a_larger_total_marks_the_artifact_capped(api: Api) -> None:
    h = api.h(api.alice)
    art = api.client.post("/v1/artifacts", json={}, headers=h).json()["id"]
    api.client.patch(f"/v1/artifacts/{art}/content?offset=0", content=b"12345", headers=h)
    done = api.client.post(
        f"/v1/artifacts/{art}/complete", json={"total_bytes": 500}, headers=h
    ).json()
    assert (done["state"], done["size_bytes"], done["total_bytes"]) == ("capped", 5, 500)


def test_the_size_cap_caps_an_upload(api: Api) -> None:
    art = _upload(api, b"x" * 100, max_bytes=10)
    info = api.client.get(f"/v1/artifacts/{art}", headers=api.h(api.alice)).json()
    assert (info["state"], info["size_bytes"], info["total_bytes"]) == ("capped", 10, 100)


def test_json_windows(api: Api) -> None:
    data = "".join(
        f"line {i} {'ERROR' if i % 100 == 0 else 'ok'}\r\n" for i in range(1, 1001)
    ).encode()
    art = _upload(api, data)
    h = api.h(api.alice)
    text = api.client.get(f"/v1/artifacts/{art}/text?offset=0&limit=20", headers=h).json()
    assert text["text"] == data[:20].decode() and text["next_offset"] == 20 and not text["eof"]
    lines = api.client.get(f"/v1/artifacts/{art}/lines?start=500&count=2", headers=h).json()
    assert [ln["text"] for ln in lines["lines"]] == ["line 500 ERROR", "line 501 ok"]
    assert lines["next_line"] == 502 and lines["line_count"] == 1000
    tail = api.client.get(f"/v1/artifacts/{art}/tail?lines=2", headers=h).json()
    assert tail["text"] == "line 999 ok\r\nline 1000 ERROR\r\n" and tail["first_line"] == 999
    grep = api.client.get(
        f"/v1/artifacts/{art}/grep",
        params={"pattern": "error", "ignore_case": "true", "max_matches": 3},
        headers=h,
    ).json()
    assert [m["line"]["number"] for m in grep["matches"]] == [100, 200, 300]
    assert grep["truncated"] and not grep["eof"]
    rest = api.client.get(
        f"/v1/artifacts/{art}/grep",
        params={"pattern": "ERROR", "offset": grep["next_offset"]},
        headers=h,
    ).json()
    assert [m["line"]["number"] for m in rest["matches"]] == [400, 500, 600, 700, 800, 900, 1000]


def test_listing_filters_sorts_and_pages(api: Api) -> None:
    ids = [
        _upload(api, b"x" * n, session_id="s1" if n % 2 else "s2") for n in (10, 300, 20, 4000, 5)
    ]
    h = api.h(api.alice)
    page = api.client.get("/v1/artifacts?sort=size&limit=2", headers=h).json()
    assert [i["size_bytes"] for i in page["items"]] == [4000, 300]
    assert page["total_bytes"] == 4335
    nxt = api.client.get(
        f"/v1/artifacts?sort=size&limit=2&cursor={page['next_cursor']}", headers=h
    ).json()
    assert [i["size_bytes"] for i in nxt["items"]] == [20, 10]
    s1 = api.client.get("/v1/artifacts?session_id=s1", headers=h).json()["items"]
    assert {i["id"] for i in s1} == {ids[4]}
    assert (
        api.client.get("/v1/artifacts?min_size=1000", headers=h).json()["items"][0]["id"] == ids[3]
    )
    bad = api.client.get("/v1/artifacts?state=bogus", headers=h)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_argument"
    bad_cursor = api.client.get("/v1/artifacts?cursor=zzz", headers=h)
    assert bad_cursor.status_code == 400 and "cursor" in bad_cursor.json()["error"]["message"]


def test_pin_retention_and_delete(api: Api) -> None:
    art = _upload(api, b"keep")
    h = api.h(api.alice)
    pinned = api.client.put(
        f"/v1/artifacts/{art}/pin", json={"reason": "evidence"}, headers=h
    ).json()
    assert pinned["pinned"] and pinned["pin_reason"] == "evidence" and pinned["expires_at"] is None
    unpinned = api.client.delete(f"/v1/artifacts/{art}/pin", headers=h).json()
    assert not unpinned["pinned"] and unpinned["expires_at"] is not None
    ret = api.client.patch(f"/v1/artifacts/{art}", json={"retention": 3600}, headers=h).json()
    assert ret["retention_source"] == "requested" and not ret["retention_clamped"]
    forever = api.client.patch(
        f"/v1/artifacts/{art}", json={"retention": "forever"}, headers=h
    ).json()
    assert forever["retention_clamped"] and "forever not allowed" in forever["retention_source"]
    gone = api.client.delete(f"/v1/artifacts/{art}", headers=h).json()
    assert gone["state"] == "deleted"
    r = api.client.get(f"/v1/artifacts/{art}/content", headers=h)
    assert r.status_code == 410 and r.json()["error"]["reason"] == "deleted"
    assert api.client.get(f"/v1/artifacts/{art}/text", headers=h).status_code == 410


def test_errors_are_json_and_name_the_problem(api: Api) -> None:
    h = api.h(api.alice)
    cases = [
        (api.client.get("/v1/artifacts/art_nope", headers=h), 400, "invalid artifact id"),
        (api.client.get(f"/v1/artifacts/{ZERO_ID}", headers=h), 404, "not found"),
        (api.client.get("/v1/artifacts"), 401, "bearer token"),
        (api.client.get("/v1/artifacts", headers=api.h("ovs_wrong")), 401, "invalid"),
        (api.client.post("/v1/artifacts", json={"kind": ""}, headers=h), 400, "kind"),
        (api.client.post("/v1/artifacts", json={"bogus": 1}, headers=h), 400, "bogus"),
        (api.client.post("/v1/artifacts", json={"retention": -5}, headers=h), 400, "retention"),
        (  # year 1 east of Greenwich has no UTC form (found by the fuzz test)
            api.client.post(
                "/v1/artifacts", json={"created_at": "0001-01-01T00:00:00+05:00"}, headers=h
            ),
            400,
            "created_at",
        ),
        (api.client.get("/v1/admin/usage", headers=h), 403, "admin"),
        (api.client.get("/v1/nowhere", headers=h), 404, "Not Found"),
    ]
    for response, status, text in cases:
        assert response.status_code == status, (response.status_code, response.text)
        body = response.json()["error"]
        assert set(body) >= {"code", "message"} and text in body["message"], body
    art = _upload(api, b"abc")
    bad_re = api.client.get(f"/v1/artifacts/{art}/grep?pattern=(", headers=h)
    assert (
        bad_re.status_code == 400
        and "invalid regular expression" in bad_re.json()["error"]["message"]
    )


def test_revoked_and_expired_tokens_stop_working(api: Api) -> None:
    issued = api.client.post(
        "/v1/admin/tokens",
        json={"principal": "agent:temp", "role": "agent"},
        headers=api.h(api.admin),
    ).json()
    token, tid = issued["token"], issued["info"]["id"]
    assert api.client.get("/v1/artifacts", headers=api.h(token)).status_code == 200
    listed = api.client.get("/v1/admin/tokens", headers=api.h(api.admin)).json()
    assert tid in [t["id"] for t in listed] and "token" not in listed[0]
    assert api.client.delete(f"/v1/admin/tokens/{tid}", headers=api.h(api.admin)).status_code == 200
    assert api.client.get("/v1/artifacts", headers=api.h(token)).status_code == 401
    from overspill.artifacts.clock import ManualClock

    clock = ManualClock()
    api.store.tokens._clock = clock
    short = api.store.tokens.create(
        NewToken(principal="agent:brief", role="agent", expires_in_s=60)
    ).token
    assert api.client.get("/v1/artifacts", headers=api.h(short)).status_code == 200
    clock.advance(seconds=61)
    assert api.client.get("/v1/artifacts", headers=api.h(short)).status_code == 401


def test_tokens_are_stored_only_as_hashes(api: Api) -> None:
    from sqlalchemy import select

    from overspill.artifacts.db.models import ApiToken

    with api.store._sessions() as s:
        rows = s.execute(select(ApiToken)).scalars().all()
    for row in rows:
        assert row.token_sha256 not in (api.alice, api.bob, api.admin)
        assert not row.token_sha256.startswith("ovs_") and len(row.token_sha256) == 64


def test_usage_is_by_owner_and_state(api: Api) -> None:
    _upload(api, b"x" * 100)
    _upload(api, b"y" * 50, token=api.bob)
    rows = {
        r["owner"]: r for r in api.client.get("/v1/admin/usage", headers=api.h(api.admin)).json()
    }
    assert (
        rows["user:alice"]["bytes"] == 100
        and rows["user:bob"]["by_state"]["complete"]["bytes"] == 50
    )


def test_health_readiness_and_metrics(api: Api) -> None:
    assert api.client.get("/healthz").json() == {"status": "ok"}
    assert api.client.get("/readyz").json() == {"status": "ready"}
    _upload(api, b"counted")
    api.client.get("/v1/artifacts", headers=api.h(api.alice))
    text = api.client.get("/metrics").text
    assert 'overspill_http_requests_total{method="GET",route="/v1/artifacts",status="200"}' in text
    assert re.search(r"^overspill_bytes_in_total 7\.0$", text, re.M)
    assert re.search(r"^overspill_artifacts_written_total 1\.0$", text, re.M)


def test_readiness_fails_when_the_blob_store_is_gone(api: Api) -> None:
    from tests.test_store import _break_blob_backend

    _break_blob_backend(api.store)
    r = api.client.get("/readyz")
    assert r.status_code == 503 and r.json()["status"] == "unavailable"


def _required_query(operation: dict[str, object]) -> dict[str, object]:
    """A valid value for every required query parameter, from its schema."""
    params: dict[str, object] = {}
    for p in operation.get("parameters", []):  # type: ignore[attr-defined]
        if p["in"] == "query" and p.get("required"):
            schema = p.get("schema", {})
            params[p["name"]] = schema.get("minimum", 0) if schema.get("type") == "integer" else "x"
    return params


def test_every_route_hides_another_owners_artifact(api: Api) -> None:
    """Walks the OpenAPI document, so a new route is covered without editing this."""
    art = _upload(api, b"alice's secret")
    spec = api.client.get("/openapi.json").json()
    checked = 0
    for path, methods in spec["paths"].items():
        for method in methods:
            url = path.replace("{artifact_id}", art).replace("{token_id}", "tok_0000")
            kwargs: dict[str, object] = {
                "headers": api.h(api.bob),
                "params": _required_query(methods[method]),
            }
            if method in ("post", "put", "patch"):
                kwargs["json"] = (
                    {"retention": 60} if method == "patch" and path.endswith("}") else {}
                )
            r = api.client.request(method.upper(), url, **kwargs)  # type: ignore[arg-type]
            if path.startswith("/v1/admin"):
                assert r.status_code == 403, (method, path, r.status_code)
            elif "{artifact_id}" in path:
                assert r.status_code == 404, (method, path, r.status_code, r.text)
                missing = api.client.request(method.upper(), url.replace(art, ZERO_ID), **kwargs)  # type: ignore[arg-type]
                assert missing.status_code == 404
                assert r.json() == {
                    "error": {
                        **missing.json()["error"],
                        "message": missing.json()["error"]["message"].replace(ZERO_ID, art),
                    }
                }
            checked += 1
    assert checked >= 20
    assert (
        api.client.get(f"/v1/artifacts/{art}/content", headers=api.h(api.alice)).content
        == b"alice's secret"
    )
    assert api.client.get(f"/v1/artifacts/{art}", headers=api.h(api.admin)).status_code == 200


def test_whoami_names_the_tokens_principal_and_role(api: Api) -> None:
    assert api.client.get("/v1/whoami", headers=api.h(api.alice)).json() == {
        "name": "user:alice",
        "role": "user",
    }
    assert api.client.get("/v1/whoami").status_code == 401


def test_a_download_link_works_without_a_header_for_that_artifact_only(api: Api) -> None:
    data = b"downloadable\n" * 1000
    art = _upload(api, data)
    other = _upload(api, b"another")
    link = api.client.post(f"/v1/artifacts/{art}/download-link", headers=api.h(api.alice)).json()
    assert link["url"].startswith(f"/v1/artifacts/{art}/content?ticket=")
    r = api.client.get(link["url"])
    assert r.status_code == 200 and r.content == data
    assert r.headers["content-disposition"].startswith("attachment")
    ranged = api.client.get(link["url"], headers={"Range": "bytes=-13"})
    assert ranged.status_code == 206 and ranged.content == b"downloadable\n"
    ticket = link["url"].split("ticket=")[1]
    elsewhere = api.client.get(f"/v1/artifacts/{other}/content", params={"ticket": ticket})
    assert elsewhere.status_code == 401
    assert elsewhere.json()["error"]["message"] == "invalid or expired download ticket"
    forged = ticket[:-4] + ("0000" if not ticket.endswith("0000") else "1111")
    assert (
        api.client.get(f"/v1/artifacts/{art}/content", params={"ticket": forged}).status_code == 401
    )
    # A ticket only stands in for the header on the content route.
    assert api.client.get(f"/v1/artifacts/{art}", params={"ticket": ticket}).status_code == 401


def test_a_download_link_for_another_owners_artifact_is_a_404(api: Api) -> None:
    art = _upload(api, b"alice only")
    r = api.client.post(f"/v1/artifacts/{art}/download-link", headers=api.h(api.bob))
    assert r.status_code == 404


def test_download_links_die_with_their_token_and_their_lifetime(api: Api) -> None:
    from overspill.artifacts.clock import ManualClock

    art = _upload(api, b"short-lived")
    clock = ManualClock()
    api.store.tokens._clock = clock
    issued = api.store.tokens.create(NewToken(principal="user:alice", role="user"))
    link = api.client.post(f"/v1/artifacts/{art}/download-link", headers=api.h(issued.token)).json()
    assert api.client.get(link["url"]).status_code == 200
    clock.advance(seconds=121)
    assert api.client.get(link["url"]).status_code == 401
    fresh = api.client.post(
        f"/v1/artifacts/{art}/download-link", headers=api.h(issued.token)
    ).json()
    api.store.tokens.revoke(issued.info.id)
    assert api.client.get(fresh["url"]).status_code == 401


def test_ui_pages_carry_a_strict_content_security_policy(api: Api) -> None:
    for path in ("/", "/sign-in", "/admin", "/artifacts/art_x", "/static/app.js"):
        r = api.client.get(path)
        assert r.status_code == 200, path
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "set-cookie" not in r.headers
    assert api.client.get("/static/app.js").headers["content-type"].startswith("text/javascript")
    etag = api.client.get("/static/style.css").headers["etag"]
    assert api.client.get("/static/style.css", headers={"If-None-Match": etag}).status_code == 304


@pytest.mark.parametrize("name", ["../pyproject.toml", "index.html", "nope.js", "%2e%2e%2fapp.py"])
def test_ui_assets_outside_the_shipped_set_are_404(api: Api, name: str) -> None:
    r = api.client.get(f"/static/{name}")
    assert r.status_code == 404


def _cursor(value: object) -> str:
    import base64
    import json

    raw = json.dumps([value, "art_" + "0" * 26]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def test_hostile_input_is_a_clear_4xx_on_every_database(api: Api) -> None:
    h = api.h(api.alice)
    nested: dict[str, object] = {}
    for _ in range(256):
        nested = {"x": nested}
    cases = [
        ("GET", "/v1/artifacts", {"params": {"sort": "size", "cursor": _cursor(2**70)}}, 400),
        ("GET", "/v1/artifacts", {"params": {"sort": "size", "cursor": _cursor(True)}}, 400),
        (
            "GET",
            "/v1/artifacts",
            {"params": {"sort": "created", "cursor": _cursor("0001-01-01T00:00:00+14:00")}},
            400,
        ),
        ("GET", "/v1/artifacts", {"params": {"created_after": "0001-01-01T00:00:00+14:00"}}, 400),
        ("GET", "/v1/artifacts", {"params": {"created_before": "9999-12-31T23:59:59-14:00"}}, 400),
        ("GET", "/v1/artifacts", {"params": {"session_id": "a\x00b"}}, 400),
        ("POST", "/v1/artifacts", {"json": {"name": "a\x00b"}}, 400),
        ("POST", "/v1/artifacts", {"json": {"source": {"cmd": "a\x00b"}}}, 400),
        ("POST", "/v1/artifacts", {"json": {"source": nested}}, 400),
        ("POST", "/v1/artifacts", {"json": {"source": {"big": "x" * 100_000}}}, 400),
        ("POST", "/v1/results", {"params": {"name": "a\x00b"}, "content": b"x"}, 400),
        ("POST", "/v1/results", {"params": {"tool": "a\x00b"}, "content": b"x"}, 400),
        ("POST", "/v1/results", {"params": {"session_id": "a\x00b"}, "content": b"x"}, 400),
        ("POST", "/v1/results", {"content": b""}, 400),  # an empty result makes no artifact
    ]
    for method, path, kwargs, status in cases:
        r = api.client.request(method, path, headers=h, **kwargs)  # type: ignore[arg-type]
        assert r.status_code == status, (kwargs, r.status_code, r.text)
        assert r.json()["error"]["message"], kwargs
    listed = api.client.get("/v1/artifacts", headers=h)
    assert listed.status_code == 200 and listed.json()["items"] == []  # nothing was stored
    art = _upload(api, b"0123456789")
    for rng in ("bytes=" + "9" * 5000 + "-", "bytes=-" + "9" * 5000, "bytes=0-" + "9" * 5000):
        r = api.client.get(f"/v1/artifacts/{art}/content", headers={**h, "Range": rng})
        assert r.status_code in (200, 206, 416), (rng, r.status_code)
    r = api.client.get(f"/v1/artifacts/{art}/content", params={"ticket": "tok_\x00." + "1" * 10})
    assert r.status_code == 401


def test_racing_appends_at_one_offset_leave_one_winner_and_a_409(api: Api) -> None:
    import threading

    h = api.h(api.alice)
    art = api.client.post("/v1/artifacts", json={}, headers=h).json()["id"]
    statuses: list[int] = []
    bodies: list[dict[str, object]] = []
    barrier = threading.Barrier(4)

    def append(i: int) -> None:
        barrier.wait()
        r = api.client.patch(
            f"/v1/artifacts/{art}/content",
            params={"offset": 0},
            content=b"x" * (1000 + i),
            headers=h,
        )
        statuses.append(r.status_code)
        bodies.append(r.json())

    threads = [threading.Thread(target=append, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [200, 409, 409, 409], bodies
    size = api.client.get(f"/v1/artifacts/{art}", headers=h).json()["size_bytes"]
    for body, status in zip(bodies, statuses, strict=True):
        if status == 409:
            assert body["error"]["code"] == "offset_conflict"  # type: ignore[index]
            assert body["error"]["current_size"] == size  # type: ignore[index]


def test_a_server_error_is_counted_in_the_metrics(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(api.store, "usage", broken)
    client = TestClient(api.app, raise_server_exceptions=False)
    assert client.get("/v1/admin/usage", headers=api.h(api.admin)).status_code == 500
    text = client.get("/metrics").text
    assert 'route="/v1/admin/usage",status="500"' in text


def test_a_trailing_slash_is_not_redirected_to_the_host_a_client_named(api: Api) -> None:
    r = api.client.get(
        "/v1/artifacts/",
        headers={**api.h(api.alice), "Host": "evil.example"},
        follow_redirects=False,
    )
    assert r.status_code == 404 and "location" not in r.headers


def test_policies_address_owners_with_a_slash(api: Api) -> None:
    h = api.h(api.admin)
    path = "/v1/admin/retention/owners/agent:team/ci"
    r = api.client.put(path, json={"default_retention_s": 3600}, headers=h)
    assert r.status_code == 200, r.text
    assert api.client.get(path, headers=h).json()["owner"] == "agent:team/ci"
    assert api.client.delete(path, headers=h).status_code == 204


@pytest.mark.parametrize("owner", ["", " ", "a b", "x\x00y", "*"])
def test_an_empty_or_malformed_owner_never_reaches_the_global_policy(api: Api, owner: str) -> None:
    h = api.h(api.admin)
    before = api.client.get("/v1/admin/retention", headers=h).json()
    r = api.client.post(
        "/v1/admin/retention/preview", json={"owner": owner, "default_retention_s": 60}, headers=h
    )
    assert r.status_code == 400 and "owner" in r.json()["error"]["message"], r.text
    from urllib.parse import quote

    if owner:
        path = f"/v1/admin/retention/owners/{quote(owner)}"
        r = api.client.put(path, json={"default_retention_s": 60}, headers=h)
        assert r.status_code == 400, r.text
    assert api.client.get("/v1/admin/retention", headers=h).json() == before


def test_a_delete_whose_bytes_cannot_be_purged_yet_still_answers_the_tombstone(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from overspill.artifacts.errors import StorageUnavailable

    art = _upload(api, b"doomed")

    def purge_fails(artifact_id: str) -> int:
        raise StorageUnavailable("blob store down")

    monkeypatch.setattr(api.store.catalog, "purge_bytes", purge_fails)
    r = api.client.delete(f"/v1/artifacts/{art}", headers=api.h(api.alice))
    assert r.status_code == 200 and r.json()["state"] == "deleted"
    monkeypatch.undo()
    assert api.store.sweeper.run().purged == 1  # the sweeper finishes the job


def test_token_create_and_revoke_are_audited(api: Api) -> None:
    h = api.h(api.admin)
    tok = api.client.post(
        "/v1/admin/tokens", json={"principal": "agent:x", "role": "agent"}, headers=h
    ).json()
    api.client.delete(f"/v1/admin/tokens/{tok['info']['id']}", headers=h)
    actions = [e.action for e in api.store.audit_log(limit=5)]
    assert actions[:2] == ["token_revoke", "token_create"]
    created = api.store.audit_log(action="token_create")[0]
    assert created.actor == "user:root" and tok["token"] not in str(created.details)


def test_head_and_content_range_while_an_artifact_is_written(api: Api) -> None:
    h = api.h(api.alice)
    art = api.client.post("/v1/artifacts", json={}, headers=h).json()["id"]
    api.client.patch(
        f"/v1/artifacts/{art}/content", params={"offset": 0}, content=b"x" * 10, headers=h
    )
    r = api.client.get(f"/v1/artifacts/{art}/content", headers={**h, "Range": "bytes=0-3"})
    assert r.status_code == 206 and r.headers["content-range"] == "bytes 0-3/*"
    head = api.client.head(f"/v1/artifacts/{art}/content", headers=h)
    assert head.status_code == 200 and head.headers["accept-ranges"] == "bytes"
    api.client.post(f"/v1/artifacts/{art}/complete", json={}, headers=h)
    r = api.client.get(f"/v1/artifacts/{art}/content", headers={**h, "Range": "bytes=0-3"})
    assert r.headers["content-range"] == "bytes 0-3/10"


def test_a_ticket_needs_the_servers_secret_not_only_the_stored_token_hash(api: Api) -> None:
    import hashlib
    import hmac
    import time

    from sqlalchemy import select

    from overspill.artifacts.db.models import ApiToken

    art = _upload(api, b"secret bytes")
    link = api.client.post(f"/v1/artifacts/{art}/download-link", headers=api.h(api.alice)).json()[
        "url"
    ]
    assert api.client.get(link).content == b"secret bytes"
    # Someone who can read the api_tokens table mints a ticket from a stored hash:
    with api.store._sessions() as s:
        row = (
            s.execute(select(ApiToken).where(ApiToken.principal == "user:alice")).scalars().first()
        )
        assert row is not None
        token_id, token_hash = row.id, row.token_sha256
    expires = int(time.time()) + 60
    message = f"{token_id}|{expires}|content:{art}".encode()
    forged = hmac.new(token_hash.encode(), message, hashlib.sha256).hexdigest()
    r = api.client.get(
        f"/v1/artifacts/{art}/content", params={"ticket": f"{token_id}.{expires}.{forged}"}
    )
    assert r.status_code == 401


def test_an_owner_over_quota_is_refused_with_403_quota_exceeded_not_413(api: Api) -> None:
    """413 would blame the request's size; a one-byte create is refused too, because
    the owner's quota is spent."""
    put = api.client.put(
        "/v1/admin/retention/owners/user:alice",
        json={"quota_bytes": 1000},
        headers=api.h(api.admin),
    )
    assert put.status_code == 200, put.text
    _upload(api, b"x" * 1000)
    r = api.client.post("/v1/artifacts", json={"name": "one more"}, headers=api.h(api.alice))
    assert r.status_code == 403, r.text
    assert r.json()["error"]["code"] == "quota_exceeded"
    assert "quota exceeded for user:alice" in r.json()["error"]["message"]


def test_mcp_and_v1_refuse_a_missing_or_bad_token_with_the_same_body(api: Api) -> None:
    for headers in ({}, {"Authorization": "Bearer ovs_not-a-token"}):
        v1 = api.client.get("/v1/artifacts", headers=headers)
        mcp = api.client.post("/mcp", headers=headers, json={})
        assert v1.status_code == mcp.status_code == 401
        assert v1.json() == mcp.json(), headers


def test_a_browser_at_an_unknown_address_gets_the_ui_saying_so(api: Api) -> None:
    page = api.client.get("/no/such/page", headers={"Accept": "text/html"})
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert "<script" in page.text
    # The API's own paths, and clients that do not ask for HTML, keep their JSON.
    for path, accept in (("/v1/nothing", "text/html"), ("/no/such/page", "application/json")):
        r = api.client.get(path, headers={"Accept": accept})
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", path
