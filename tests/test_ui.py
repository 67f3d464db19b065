"""The web UI in a real headless Chromium (Debian's), driven by Playwright, against
a real uvicorn server on loopback.

The suite runs on SQLite + local blobs; one end-to-end case runs on PostgreSQL +
moto's S3 server (the UI only talks to the API, which every backend pair tests).
Without Chromium or Playwright the cases are skipped with the reason, unless
TEST_OVERSPILL_REQUIRE_BROWSER is set (CI sets it), and then they fail.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from overspill.api.server.app import create_app
from overspill.artifacts.catalog.tokens import NewToken
from overspill.artifacts.records import Principal
from overspill.artifacts.store import ArtifactStore
from tests.api_helpers import live_server
from tests.conftest import _truncate_all
from tests.helpers import make_bucket, store_settings, unavailable, write_artifact

CHROMIUM = os.environ.get("TEST_OVERSPILL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SHOTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "ui"
ALICE = Principal(name="user:alice", role="user")
BOB = Principal(name="user:bob", role="user")
ROOT = Principal(name="user:root", role="admin")
TIMEOUT_MS = 15_000

pytestmark = pytest.mark.browser


def _browser_reason() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = _browser_reason()
    if reason:
        unavailable(reason, "TEST_OVERSPILL_REQUIRE_BROWSER")
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield b
    b.close()
    pw.stop()


@dataclass
class Site:
    url: str
    store: ArtifactStore
    admin: str
    alice: str
    bob: str


def _site(store: ArtifactStore) -> Iterator[Site]:
    tokens = {
        name: store.tokens.create(NewToken(principal=p.name, role=p.role)).token
        for name, p in (("admin", ROOT), ("alice", ALICE), ("bob", BOB))
    }
    with live_server(create_app(store)) as url:
        yield Site(url=url, store=store, **tokens)


@pytest.fixture
def site(tmp_path: Path, sqlite_template: Path) -> Iterator[Site]:
    db = tmp_path / "overspill.db"
    shutil.copyfile(sqlite_template, db)
    settings = store_settings(tmp_path, f"sqlite:///{db}", (tmp_path / "blobs").as_uri())
    store = ArtifactStore.open(settings)
    yield from _site(store)
    store.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context per test; any uncaught script error fails the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    context.set_default_timeout(TIMEOUT_MS)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))

    def on_dialog(d: Any) -> None:
        errors.append(f"unexpected dialog: {d.message}")
        d.dismiss()

    pg.on("dialog", on_dialog)
    yield pg
    context.close()
    assert not errors, errors


def sign_in(page: Any, site: Site, token: str, path: str = "/") -> None:
    page.goto(f"{site.url}{path}#token={token}")
    page.wait_for_selector("#nav .who")


def output(
    store: ArtifactStore,
    data: bytes,
    who: Principal = ALICE,
    *,
    command: str = "make test",
    stream: str = "stdout",
    exit_code: int = 0,
    session_id: str | None = None,
) -> str:
    return write_artifact(
        store,
        data,
        who,
        session_id=session_id,
        name=f"bash {stream}",
        source={"tool": "bash", "stream": stream, "command": command, "exit_code": exit_code},
    )


def row_ids(page: Any) -> list[str]:
    """The artifact ids listed, once the (asynchronously drawn) list is there."""
    page.wait_for_selector("#summary")
    return list(
        page.eval_on_selector_all("table.artifacts tbody tr", "rs => rs.map(r => r.dataset.id)")
    )


def open_search(page: Any, site: Site, count: int, failing: dict[int, bytes]) -> None:
    """Lines ``ok N`` (1 to count-1), ``FAIL test_N<rest>`` at the given numbers, on
    Alice's artifact page with its Search tab open."""
    lines = [b"ok %d" % i for i in range(1, count)]
    for n, rest in failing.items():
        lines[n - 1] = b"FAIL test_%d" % n + rest
    art = output(site.store, b"\n".join(lines) + b"\n")
    sign_in(page, site, site.alice, f"/artifacts/{art}")
    page.click("#tab-search")


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=True)


# -- signing in ---------------------------------------------------------------------------


def test_signing_in_with_a_pasted_token_lands_where_the_user_was_going(
    page: Any, site: Site
) -> None:
    art = output(site.store, b"hello\n")
    page.goto(f"{site.url}/artifacts/{art}")
    page.wait_for_url("**/sign-in?next=*")
    page.fill("#token", "ovs_not-a-real-token")
    page.click("button[type=submit]")
    page.wait_for_selector(".error:has-text('not valid')")
    page.fill("#token", site.alice)
    page.click("button[type=submit]")
    page.wait_for_url(f"**/artifacts/{art}")
    page.wait_for_selector("#head-text")
    assert page.inner_text("#nav .who") == "user:alice (user)"
    assert page.context.cookies() == []
    assert site.alice not in page.url


@pytest.mark.parametrize(
    "next_", ["//attacker.test/x", "/\\attacker.test/x", "https://attacker.test/"]
)
def test_signing_in_never_redirects_to_another_site(page: Any, site: Site, next_: str) -> None:
    from urllib.parse import quote

    page.goto(f"{site.url}/sign-in?next={quote(next_)}")
    page.fill("#token", site.alice)
    page.click("button[type=submit]")
    page.wait_for_selector("#summary")
    assert page.url.startswith(site.url + "/")


def test_the_link_printed_by_serve_signs_in_and_drops_the_token_from_the_address_bar(
    page: Any, site: Site
) -> None:
    sign_in(page, site, site.admin)
    assert "#token" not in page.url and site.admin not in page.url
    assert page.is_visible("#nav a[href='/admin']")
    page.click("#nav button:has-text('Sign out')")
    page.wait_for_url("**/sign-in")
    page.goto(f"{site.url}/")
    page.wait_for_url("**/sign-in?next=*")


def test_a_user_sees_only_their_own_artifacts_and_no_admin_pages(page: Any, site: Site) -> None:
    mine = output(site.store, b"alice\n" * 10)
    theirs = output(site.store, b"bob\n" * 10, BOB)
    sign_in(page, site, site.alice)
    page.wait_for_selector("table.artifacts")
    assert row_ids(page) == [mine]
    assert not page.is_visible("#nav a[href='/admin']")
    page.goto(f"{site.url}/artifacts/{theirs}")
    page.wait_for_selector("h1:has-text('Not found')")


def test_an_unknown_address_shows_the_ui_saying_there_is_no_such_page(
    page: Any, site: Site
) -> None:
    sign_in(page, site, site.alice, "/no/such/<page>")
    page.wait_for_selector("h1:has-text('No such page')")
    assert "/no/such/%3Cpage%3E" in page.inner_text("main code")
    page.click("main a[href='/']")
    # The list page: its table, or the sentence saying it has nothing yet.
    page.wait_for_selector("h1:has-text('Large outputs')")
    page.wait_for_selector("table.artifacts, main p.empty")


# -- the list -----------------------------------------------------------------------------


def test_the_list_sorts_by_size_and_age_and_filters(page: Any, site: Site) -> None:
    small = output(site.store, b"s\n" * 10, session_id="conv-1")
    big = output(site.store, b"b" * 50_000, session_id="conv-2", exit_code=2)
    medium = output(site.store, b"m\n" * 1000, session_id="conv-1")
    bobs = output(site.store, b"x" * 20_000, BOB)
    sign_in(page, site, site.admin)
    page.wait_for_selector("table.artifacts")
    assert row_ids(page) == [bobs, medium, big, small]  # newest first
    page.click("th a.sort:has-text('Size')")
    page.wait_for_url("**sort=size**")
    assert row_ids(page) == [big, bobs, medium, small]
    page.click("th a.sort:has-text('Size')")  # again: smallest first
    page.wait_for_url("**order=asc**")
    assert row_ids(page) == [small, medium, bobs, big]
    assert "exit 2" in page.inner_text(f"tr[data-id='{big}'] td.source")

    page.goto(f"{site.url}/")
    page.fill("#f-session_id", "conv-1")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**session_id=conv-1**")
    assert sorted(row_ids(page)) == sorted([small, medium])
    assert "1.97 KiB stored in all that match" in page.inner_text("#summary")

    page.goto(f"{site.url}/")
    page.fill("#f-min", "10k")
    page.fill("#f-owner", "user:bob")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**owner=user%3Abob**")
    assert row_ids(page) == [bobs]

    page.goto(f"{site.url}/")
    page.fill("#f-min", "ten megs")
    page.click("form.filters button[type=submit]")
    page.wait_for_selector("form.filters .error:has-text('is not a size')")

    site.store.delete(ALICE, small)
    page.goto(f"{site.url}/")
    page.select_option("#f-state", "deleted")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**state=deleted**")
    assert row_ids(page) == [small]
    shot(page, "list-deleted-filter.png")


def test_paging_follows_the_cursor(page: Any, site: Site) -> None:
    ids = [output(site.store, b"%d\n" % i) for i in range(53)]
    sign_in(page, site, site.alice)
    page.wait_for_selector("table.artifacts")
    first = row_ids(page)
    assert len(first) == 50 and first[0] == ids[-1]
    page.click("a[rel=next]")
    page.wait_for_url("**cursor=**")
    assert row_ids(page) == list(reversed(ids[:3]))
    assert not page.is_visible("a[rel=next]")
    page.click("a:has-text('First page')")
    page.wait_for_selector(f"tr[data-id='{ids[-1]}']")


def test_bulk_delete_and_pin_ask_first_and_cancelling_changes_nothing(
    page: Any, site: Site
) -> None:
    a, b, c = (output(site.store, b"%d\n" % i * 100) for i in range(3))
    sign_in(page, site, site.alice)
    page.check(f"input[value='{a}']")
    page.check(f"input[value='{b}']")
    page.click("button:has-text('Delete selected')")
    page.wait_for_selector("dialog[open] h2:has-text('Delete 2 artifacts')")
    page.click("dialog[open] button:has-text('Cancel')")
    assert site.store.get(ALICE, a).state == "complete"

    page.click("button:has-text('Delete selected')")
    page.click("dialog[open] button.danger")
    page.wait_for_selector(".flash:has-text('Deleted 2 artifacts')")
    assert {site.store.get(ALICE, x).state for x in (a, b)} == {"deleted"}
    assert row_ids(page) == [c]

    page.check("th input[type=checkbox]")  # select all on the page
    page.click("button:has-text('Pin selected')")
    page.fill("#dlg-reason", "keep for the incident")
    page.click("dialog[open] button.primary")
    page.wait_for_selector(".flash:has-text('Pinned 1 artifact')")
    info = site.store.get(ALICE, c)
    assert info.pinned and info.pin_reason == "keep for the incident"
    assert page.inner_text(f"tr[data-id='{c}'] .badge.pinned") == "pinned"


# -- one artifact -------------------------------------------------------------------------


def test_an_artifact_page_shows_metadata_head_tail_and_line_pages(page: Any, site: Site) -> None:
    data = b"".join(b"line %d of the build\n" % i for i in range(1, 5001))
    art = output(site.store, data, command="make -j8 all", exit_code=2, session_id="conv-7")
    sign_in(page, site, site.alice, f"/artifacts/{art}")
    page.wait_for_selector("#tail-text")
    meta = page.inner_text("dl.meta")
    for expected in ("make -j8 all", "exit 2", "conv-7", "5,000", hashlib.sha256(data).hexdigest()):
        assert expected in meta
    head = page.inner_text("#head-text")
    assert head.startswith("line 1 of the build\nline 2 of the build")
    assert page.inner_text("#tail-text").rstrip().endswith("line 5000 of the build")
    shot(page, "artifact.png")

    page.click("#tab-lines")
    page.wait_for_selector("#lines-out .line")
    assert page.inner_text("#lines-info").startswith("Lines 1\u2013200 of 5,000")
    page.click("button:has-text('Next →')")
    page.wait_for_selector("#lines-info:has-text('Lines 201\u2013400')")
    assert page.inner_text("#lines-out .line:first-child .lt") == "line 201 of the build"
    page.fill("#goto-line", "4990")
    page.press("#goto-line", "Enter")
    page.wait_for_selector("#lines-info:has-text('Lines 4,990\u20135,000')")
    assert page.is_disabled("button:has-text('Next →')")
    assert page.url.endswith("#lines:4990")
    page.reload()  # the line page is in the address, so it can be shared
    page.wait_for_selector("#lines-info:has-text('Lines 4,990\u20135,000')")


def test_a_compressed_artifact_shows_both_sizes_and_reads_the_same(page: Any, site: Site) -> None:
    data = b"".join(b"line %d of the build\n" % i for i in range(1, 50001))
    art = output(site.store, data)
    assert site.store.compactor.compact(art)
    stored = site.store.get(ALICE, art).stored_bytes
    assert stored is not None
    sign_in(page, site, site.alice, f"/artifacts/{art}")
    page.wait_for_selector("#tail-text")
    meta = page.inner_text("dl.meta")
    assert f"{len(data):,} bytes" in meta and "as compressed frames" in meta
    assert f"{stored * 100 / len(data):.1f}% of the output" in meta
    assert page.inner_text("#head-text").startswith("line 1 of the build\n")
    assert page.inner_text("#tail-text").rstrip().endswith("line 50000 of the build")


def test_search_highlights_matches_with_context_and_continues(page: Any, site: Site) -> None:
    open_search(
        page,
        site,
        400,
        {50: b": AssertionError", 51: b": AssertionError", 300: b": AssertionError"},
    )
    page.fill("#grep-pattern", "fail|assertion")
    page.check("#grep-i")
    page.select_option("#grep-c", "1")
    page.click("form[role=search] button[type=submit]")
    page.wait_for_selector("#grep-info:has-text('3 matching lines')")
    hits = page.eval_on_selector_all("#grep-results .hit .ln", "els => els.map(e => e.textContent)")
    assert hits == ["50", "51", "300"]
    marks = page.eval_on_selector_all(
        "#grep-results .hit:first-child mark, #grep-results .hit mark",
        "els => els.map(e => e.textContent)",
    )
    assert marks[:2] == ["FAIL", "Assertion"]
    numbers = page.eval_on_selector_all("#grep-results .ln", "els => els.map(e => e.textContent)")
    assert numbers == ["49", "50", "51", "52", "299", "300", "301"]  # shared context shown once
    page.click("#grep-results .hit a.ln:has-text('300')")
    page.wait_for_selector("#lines-info:has-text('Lines 300\u2013')")

    page.click("#tab-search")
    page.fill("#grep-pattern", "(unclosed")
    page.click("form[role=search] button[type=submit]")
    page.wait_for_selector("#grep-info.error:has-text('invalid')")  # inline, where the results were


def test_download_saves_the_exact_bytes(page: Any, site: Site, tmp_path: Path) -> None:
    data = bytes(range(256)) * 500 + b"\xff\xfe not utf-8"
    art = output(site.store, data)
    sign_in(page, site, site.alice, f"/artifacts/{art}")
    with page.expect_download() as info:
        page.click("button:has-text('Download')")
    target = tmp_path / "download.bin"
    info.value.save_as(target)
    assert target.read_bytes() == data
    assert info.value.suggested_filename == f"{art}.txt"


def test_pin_unpin_and_retention_changes_say_what_applied(page: Any, site: Site) -> None:
    from overspill.artifacts.catalog.policies import PolicySpec

    site.store.policies.set(ROOT, PolicySpec(max_retention_s=30 * 86400))
    art = output(site.store, b"keep me\n")
    sign_in(page, site, site.alice, f"/artifacts/{art}")
    page.click("button:has-text('Pin…')")
    page.fill("#dlg-reason", "incident 42")
    page.click("dialog[open] button.primary")
    page.wait_for_selector(".flash:has-text('Pinned.')")
    assert "never while pinned" in page.inner_text("dl.meta")
    assert "incident 42" in page.inner_text("dl.meta")
    page.click("button:has-text('Unpin')")
    page.click("dialog[open] button.primary")
    page.wait_for_selector(".flash:has-text('Unpinned.')")
    assert not site.store.get(ALICE, art).pinned

    page.click("button:has-text('Retention…')")
    page.select_option("#dlg-preset", "7776000")  # 90 days, above the 30 day ceiling
    page.click("dialog[open] button.primary")
    page.wait_for_selector(".flash:has-text('Clamped')")
    info = site.store.get(ALICE, art)
    assert info.retention_clamped and info.expires_at is not None
    assert (info.expires_at - info.created_at).days == 30
    assert "clamped" in page.inner_text("dl.meta")

    page.click("button:has-text('Retention…')")
    page.select_option("#dlg-preset", "custom")
    page.fill("#dlg-custom", "soon")
    page.click("dialog[open] button.primary")
    page.wait_for_selector(".flash-error:has-text('not a duration')")


def test_deleting_from_the_page_leaves_a_tombstone(page: Any, site: Site) -> None:
    art = output(site.store, b"bye\n" * 100)
    sign_in(page, site, site.alice, f"/artifacts/{art}")
    page.click("button:has-text('Delete…')")
    page.click("dialog[open] button.danger")
    page.wait_for_selector(".notice:has-text('was deleted')")
    assert not page.is_visible("button:has-text('Download')")
    assert site.store.get(ALICE, art).state == "deleted"


def test_markup_and_terminal_escapes_in_content_are_shown_as_text(page: Any, site: Site) -> None:
    payload = (
        b"<script>window.__pwned = 1</script>\n"
        b'<img src=x onerror="window.__pwned = 2">\n'
        b"\x1b[31mred\x1b[0m and \xe2\x80\xaeevil\n"
    )
    art = output(site.store, payload * 3, command="<b onmouseover=alert(1)>build</b>")
    sign_in(page, site, site.alice, f"/artifacts/{art}")
    page.wait_for_selector("#head-text")
    head = page.inner_text("#head-text")
    assert "<script>window.__pwned = 1</script>" in head
    assert '<img src=x onerror="window.__pwned = 2">' in head
    assert "\\x1b[31mred\\x1b[0m" in head and "\\u202e" in head and "\x1b" not in head
    assert page.locator("#head-text .ctl").count() == 9
    assert page.locator("#head-text script, #head-text img, main b").count() == 0
    assert page.inner_text("h1.title") == "<b onmouseover=alert(1)>build</b>"
    page.click("#tab-search")
    page.fill("#grep-pattern", "script")
    page.click("form[role=search] button[type=submit]")
    page.wait_for_selector("#grep-results .hit mark")
    assert page.locator("#grep-results script").count() == 0
    page.goto(f"{site.url}/")
    page.wait_for_selector("table.artifacts")
    assert page.evaluate("window.__pwned") is None
    shot(page, "list-with-markup.png")


def test_a_still_writing_artifact_updates_live(page: Any, site: Site) -> None:
    writer = site.store.open_writer(
        ALICE, source={"tool": "bash", "stream": "stdout", "command": "tail -f app.log"}
    )
    writer.write(b"first line\n")
    writer.flush()
    sign_in(page, site, site.alice, f"/artifacts/{writer.id}")
    page.wait_for_selector(".live:has-text('still being written')")
    assert "first line" in page.inner_text("#head-text")
    writer.write(b"second line, written later\n")
    writer.flush()
    page.wait_for_selector("#head-text:has-text('second line, written later')")
    writer.close()
    page.wait_for_selector(".live:has-text('finished: complete')")
    assert "complete" in page.inner_text("dl.meta")


def test_at_1280_by_800_the_tail_is_on_screen_at_its_last_line_numbered(
    browser: Any, site: Site
) -> None:
    data = b"".join(b"step %d: compiling module_%d\n" % (i, i % 50) for i in range(1, 20001))
    art = output(site.store, data, command="make -j8 all", exit_code=2)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        sign_in(page, site, site.alice, f"/artifacts/{art}")
        page.wait_for_selector("#tail-text .line")
        last = page.locator("#tail-text .line").last
        assert last.inner_text().replace("\t", " ").split() == [
            "20000",
            "step",
            "20000:",
            "compiling",
            "module_0",
        ]
        box = last.bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 800
        # The pane is scrolled to its end: its last row is inside the pane's box.
        pane = page.locator("#tail-text").bounding_box()
        assert pane is not None and box["y"] + box["height"] <= pane["y"] + pane["height"] + 1
        first = int(page.locator("#tail-text .line .ln").first.inner_text())
        assert first == 20000 - 200 + 1  # numbered from the window's first line
        page.screenshot(path=str(SHOTS / "artifact-1280x800.png"))  # not full page: the screen
        page.click("text=Last page of lines")
        page.wait_for_selector("#lines-info:has-text('Lines 19,801')")
        assert (
            page.locator("#lines-out .line .lt").last.inner_text()
            == "step 20000: compiling module_0"
        )
    finally:
        context.close()


def test_failure_like_lines_are_listed_and_lead_into_the_lines(page: Any, site: Site) -> None:
    lines = [b"step %d ok" % i for i in range(1, 6001)]
    lines[41] = b"src/net.c:12: error: expected ';'"
    lines[2999] = b"TypeError: cannot read property 'x'"
    art = output(site.store, b"\n".join(lines) + b"\n")
    sign_in(page, site, site.alice, f"/artifacts/{art}")
    page.wait_for_selector("#failures .line")
    rows = page.locator("#failures .line")
    assert rows.count() == 2
    assert rows.nth(0).locator(".ln").inner_text() == "42"
    assert "error: expected" in rows.nth(0).inner_text()
    assert rows.nth(1).locator(".ln").inner_text() == "3000"
    rows.nth(1).locator(".ln").click()
    page.wait_for_selector("#lines-info:has-text('Lines 3,000')")


def test_the_failure_highlight_marks_whole_words(page: Any, site: Site) -> None:
    lines = [b"step %d ok" % i for i in range(1, 3001)]
    lines[9] = b"AttributeError: 'NoneType' object has no attribute 'x'"
    lines[19] = b"2026-12-07 12:00:01 ERROR db down"
    lines[29] = b"E       RuntimeError: fixture setup failed"
    art = output(site.store, b"\n".join(lines) + b"\n")
    sign_in(page, site, site.alice, f"/artifacts/{art}")
    page.wait_for_selector("#failures .line mark")
    marks = {
        row.locator(".ln").inner_text(): [m.inner_text() for m in row.locator("mark").all()]
        for row in page.locator("#failures .line").all()
    }
    assert marks == {
        "10": ["AttributeError"],
        "20": ["ERROR"],
        "30": ["E       RuntimeError"],
    }


def test_following_a_growing_artifact_can_be_switched_off(page: Any, site: Site) -> None:
    writer = site.store.open_writer(ALICE, source={"tool": "bash", "command": "tail -f app.log"})
    writer.write(b"".join(b"early %d\n" % i for i in range(3000)))
    writer.flush()
    sign_in(page, site, site.alice, f"/artifacts/{writer.id}")
    page.wait_for_selector("#follow")
    assert page.is_checked("#follow")
    writer.write(b"followed line\n")
    writer.flush()
    page.wait_for_selector("#tail-text .line:last-child:has-text('followed line')")
    page.uncheck("#follow")
    writer.write(b"not followed\n")
    writer.flush()
    page.wait_for_selector("dl.meta:has-text('3,002')")  # the details still update
    assert "not followed" not in page.inner_text("#tail-text")
    writer.close()


def test_search_steps_through_its_matches(page: Any, site: Site) -> None:
    open_search(page, site, 300, {20: b"", 150: b"", 280: b""})
    page.fill("#grep-pattern", "FAIL")
    page.press("#grep-pattern", "Enter")
    page.wait_for_selector("#grep-results .hit")
    page.click("#next-hit")
    assert page.inner_text("#hit-info") == "match 1 of 3 shown"
    assert "FAIL test_20" in page.inner_text("#grep-results .hit.current")
    page.click("#prev-hit")
    assert page.inner_text("#hit-info") == "match 3 of 3 shown"
    assert "FAIL test_280" in page.inner_text("#grep-results .hit.current")
    assert page.locator("#grep-results .hit mark").count() == 3  # each match highlighted


def test_binary_content_is_shown_as_hex_never_as_text(page: Any, site: Site) -> None:
    import os as _os

    data = bytes(range(256)) * 16 + _os.urandom(40_000)
    art = output(site.store, data)
    sign_in(page, site, site.alice, f"/artifacts/{art}")
    page.wait_for_selector("#hex-view")
    assert "binary data" in page.inner_text("#binary-notice")
    rows = page.inner_text("#hex-view").splitlines()
    assert rows[0] == "00000000  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f  ................"
    assert rows[2].endswith(" !\"#$%&'()*+,-./")
    assert len(rows) == 4096 // 16
    assert page.locator("#head-text").count() == 0


def test_a_large_artifact_page_reads_only_bounded_windows(page: Any, site: Site) -> None:
    line = b"x" * 99 + b"\n"
    writer = site.store.open_writer(ALICE, source={"command": "big"})
    for _ in range(320):  # 32 MB
        writer.write(line * 1000)
    writer.close()
    received: list[int] = []

    def count(response: Any) -> None:
        if "/v1/artifacts/" in response.url:
            received.append(len(response.body()))

    page.on("response", count)
    sign_in(page, site, site.alice, f"/artifacts/{writer.id}")
    page.wait_for_selector("#tail-text")
    page.click("#tab-lines")
    page.wait_for_selector("#lines-out .line")
    assert "of 320,000" in page.inner_text("#lines-info")
    assert sum(received) < 512 * 1024, received


# -- admin ----------------------------------------------------------------------------------


def test_a_policy_is_saved_only_after_its_preview(page: Any, site: Site) -> None:
    output(site.store, b"old output\n" * 100)
    output(site.store, b"bob output\n" * 10, BOB)
    sign_in(page, site, site.admin, "/admin")
    page.wait_for_selector("#policy-preview")
    assert page.is_disabled("#policy-save")
    page.fill("#p-default", "1h")
    page.fill("#p-max", "2d")
    page.check("#p-apply")
    page.click("#policy-preview")
    page.wait_for_selector("table.preview")
    preview = page.inner_text("table.preview")
    assert "user:alice" in preview and "user:bob" in preview
    total = page.inner_text("table.preview tr.total")
    assert total.split("\t")[2].startswith("2 (")  # both expire within 24 h under 1h
    assert page.is_enabled("#policy-save")
    page.fill("#p-default", "3h")  # an edit needs a new preview
    assert page.is_disabled("#policy-save")
    page.click("#policy-preview")
    page.wait_for_selector("table.preview")
    page.click("#policy-save")
    page.wait_for_selector(
        ".flash:has-text('Saved the global policy; 2 existing artifacts updated')"
    )
    view = site.store.policies.get()
    assert (view.default_retention_s, view.max_retention_s) == (3 * 3600, 2 * 86400)
    shot(page, "admin-retention.png")

    page.fill("#new-owner", "user:bob")
    page.click("button:has-text('Set a policy for this owner')")
    page.wait_for_selector("h2:has-text('Policy for user:bob')")
    page.fill("#p-quota", "10MB")
    page.select_option("#p-over", "evict")
    page.select_option("#p-redact", "off")  # bob's output may be stored as printed
    page.click("#policy-preview")
    page.wait_for_selector("table.preview")
    page.click("#policy-save")
    page.wait_for_selector(".flash:has-text('Saved the user:bob policy')")
    assert "Audit log: policy by user:root" in page.inner_text(".flash")
    bob = site.store.policies.get("user:bob")
    assert bob.quota_bytes == 10_000_000 and bob.redact is False
    (entry,) = site.store.audit_log(owner="user:bob", action="policy")
    assert entry.details["redact"] is False
    page.wait_for_selector("td:has-text('user:bob')")
    page.fill("#p-quota", "lots")
    page.click("#policy-preview")
    page.wait_for_selector("form.policy .error:has-text('is not a size')")


def test_admin_sees_usage_manages_tokens_and_reads_the_audit_log(page: Any, site: Site) -> None:
    art = output(site.store, b"a" * 3000)
    output(site.store, b"b" * 1000, BOB)
    site.store.pin(ALICE, art, reason="audit me")
    sign_in(page, site, site.admin, "/admin")
    page.click("#tab-usage")
    page.wait_for_selector("#panel-usage table")
    usage = page.inner_text("#panel-usage")
    assert "user:alice" in usage and "2.93 KiB" in usage and "3.91 KiB stored by 2 owners" in usage

    page.click("#tab-tokens")
    page.fill("#t-principal", "agent:ci-bot")
    page.select_option("#t-role", "agent")
    page.fill("#t-expires", "30d")
    page.click("button:has-text('Create token')")
    secret = page.input_value("#new-token")
    assert secret.startswith("ovs_")
    who = site.store.tokens.authenticate(secret)
    assert who is not None and who.name == "agent:ci-bot"
    row = page.locator("#panel-tokens tr:has-text('agent:ci-bot')")
    row.locator("button:has-text('Revoke')").click()
    page.click("dialog[open] button.danger")
    page.wait_for_selector(".flash:has-text('Revoked')")
    assert site.store.tokens.authenticate(secret) is None

    page.click("#tab-audit")
    page.wait_for_selector("#panel-audit table")
    assert "pin" in page.inner_text("#panel-audit table")
    page.fill("#a-action", "pin")
    page.click("#panel-audit button:has-text('Filter')")
    page.wait_for_selector(f"#panel-audit a:has-text('{art}')")


def test_cleanup_runs_only_after_a_dry_run(page: Any, site: Site) -> None:
    from overspill.artifacts.clock import ManualClock

    clock = ManualClock()
    site.store.clock = clock
    art = write_artifact(site.store, b"expiring\n", ALICE, retention=60)
    clock.advance(seconds=120)
    sign_in(page, site, site.admin, "/admin#cleanup")
    page.wait_for_selector("#cleanup-dry")
    assert page.is_disabled("#cleanup-run")
    page.click("#cleanup-dry")
    page.wait_for_selector("#cleanup-report:has-text('Dry run')")
    assert site.store.get(ROOT, art).state == "expired"  # expired on read, not yet swept
    page.click("#cleanup-run")
    page.click("dialog[open] button.danger")
    page.wait_for_selector("#cleanup-report:has-text('Cleanup done')")
    assert f"{art}" in page.inner_text("#cleanup-report")


# -- security, keyboard, layout, other backends ------------------------------------------------


def test_another_site_cannot_change_anything(page: Any, site: Site) -> None:
    art = output(site.store, b"precious\n")
    sign_in(page, site, site.alice)
    # A page on another site, in the same browser the user is signed in with.
    page.route(
        "http://attacker.test/**",
        lambda route: route.fulfill(
            body="<!doctype html><title>elsewhere</title>", content_type="text/html"
        ),
    )
    page.goto("http://attacker.test/")
    blocked = page.evaluate(
        """async ([base, id]) => {
          try {
            await fetch(`${base}/v1/artifacts/${id}`, {method: "DELETE", credentials: "include"});
            return false;
          } catch (e) { return true; }
        }""",
        [site.url, art],
    )
    assert blocked  # the browser refuses: no CORS grant for another origin
    assert page.evaluate("sessionStorage.getItem('overspill.token')") is None
    # The classic cross-site form post reaches the server, and is refused.
    page.evaluate(
        """base => {
          const f = document.createElement("form");
          f.method = "POST";
          f.action = `${base}/v1/admin/tokens`;
          const i = document.createElement("input");
          i.name = "principal";
          i.value = "agent:attacker";
          f.append(i);
          document.body.append(f);
          f.submit();
        }""",
        site.url,
    )
    # Refused at the door: the post comes from a page that is not the server's.
    page.wait_for_selector("text=requests from pages at http://attacker.test are not accepted")
    assert site.store.get(ALICE, art).state == "complete"
    assert "agent:attacker" not in [t.principal for t in site.store.tokens.list()]
    assert list(site.store.audit_log(action="delete")) == []


def test_the_keyboard_alone_reaches_an_artifact_and_its_search(page: Any, site: Site) -> None:
    art = output(site.store, b"needle in a haystack\n" * 5)
    sign_in(page, site, site.alice)
    page.wait_for_selector("table.artifacts")
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('command')"):
            break
    else:
        pytest.fail("Tab never reached the artifact link")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/artifacts/{art}")
    page.wait_for_selector("#head-text")
    page.focus("#tab-overview")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.id") == "tab-search"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "grep-pattern"
    page.keyboard.type("needle")
    page.keyboard.press("Enter")
    page.wait_for_selector("#grep-info:has-text('5 matching lines')")


@pytest.mark.parametrize("path", ["/", "/artifacts/{art}", "/admin"])
def test_a_narrow_window_needs_no_sideways_scrolling(page: Any, site: Site, path: str) -> None:
    art = output(site.store, b"w" * 5000 + b"\n", command="x" * 300)
    page.set_viewport_size({"width": 390, "height": 800})
    sign_in(page, site, site.admin, path.format(art=art))
    page.wait_for_selector("main h1")
    page.wait_for_load_state("networkidle")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    if path == "/":
        shot(page, "list-narrow.png")


@pytest.mark.postgres
def test_the_ui_on_postgresql_and_s3(
    page: Any, tmp_path: Path, pg_database_url: str, moto_server: str
) -> None:
    settings = store_settings(
        tmp_path,
        pg_database_url,
        f"s3://{make_bucket(moto_server)}/ui",
        s3_endpoint_url=moto_server,
    )
    store = ArtifactStore.open(settings)
    try:
        for s in _site(store):
            data = b"".join(b"row %d\n" % i for i in range(20_000))
            art = output(store, data, command="seq")
            sign_in(page, s, s.alice)
            page.click(f"tr[data-id='{art}'] a.command")
            page.wait_for_selector("#tail-text:has-text('row 19999')")
            page.click("#tab-search")
            page.fill("#grep-pattern", "^row 1234$")
            page.click("form[role=search] button[type=submit]")
            page.wait_for_selector("#grep-results .hit .ln:has-text('1235')")
            with page.expect_download() as dl:
                page.click("button:has-text('Download')")
            assert Path(dl.value.path()).read_bytes() == data
    finally:
        store.close()
        _truncate_all(pg_database_url)


def test_control_characters_in_metadata_are_shown_as_escapes(page: Any, site: Site) -> None:
    art = write_artifact(
        site.store,
        b"ok\n",
        session_id="sess\x1b[2J\u202eevil",
        name="name\x07bell",
        source={"command": "make \x1b[31mred\x1b[0m \u202eexe.txt", "stream": "stdout"},
    )
    site.store.pin(ALICE, art, "why\x1b]0;title\x07")
    sign_in(page, site, site.alice, "/")
    page.wait_for_selector("table.artifacts")
    row = page.inner_text("table.artifacts tbody")
    assert "\\x1b[31mred\\x1b[0m" in row and "\\u202e" in row and "\x1b" not in row
    page.goto(f"{site.url}/artifacts/{art}")
    page.wait_for_selector("#head-text")
    body = page.inner_text("main")
    assert "\x1b" not in body and "\x07" not in body and "\u202e" not in body
    assert "\\x07" in body and "\\u202e" in body


def test_the_api_docs_render_with_the_network_blocked(page: Any, site: Site) -> None:
    outside: list[str] = []

    def only_loopback(route: Any) -> None:
        url = route.request.url
        if url.startswith(site.url):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    page.context.route("**/*", only_loopback)
    page.goto(f"{site.url}/docs")
    page.wait_for_selector(".opblock")
    assert "overspill" in page.inner_text(".swagger-ui .info")
    assert page.locator(".opblock").count() >= 20
    assert outside == []  # Swagger UI fetched nothing from anywhere else
    page.goto(f"{site.url}/redoc")
    page.wait_for_selector("h1")
    assert "overspill" in page.inner_text("h1")
    # ReDoc renders offline; only its "API docs by Redocly" logo is an outside image.
    assert all(url.endswith(".svg") for url in outside), outside


def test_search_states_no_matches_errors_clear_results_and_cancel(page: Any, site: Site) -> None:
    art = output(site.store, b"".join(b"line %d ok\n" % i for i in range(20_000)), exit_code=2)
    sign_in(page, site, site.alice, f"/artifacts/{art}")
    page.click("#tab-search")
    page.fill("#grep-pattern", "line 1999[0-9] ok")
    page.click("form[role=search] button[type=submit]")
    page.wait_for_selector("#grep-info:has-text('10 matching lines')")
    assert page.locator("#grep-results .hit").count() == 10
    page.fill("#grep-pattern", "(")  # a bad regex: the old results go, the error shows
    page.click("form[role=search] button[type=submit]")
    page.wait_for_selector("#grep-info.error:has-text('invalid regular expression')")
    assert page.locator("#grep-results .line").count() == 0
    page.fill("#grep-pattern", "NOTHING_LIKE_THIS")
    page.click("form[role=search] button[type=submit]")
    page.wait_for_selector("#grep-info:has-text('No matches in bytes 0')")
    assert "(all of it)" in page.inner_text("#grep-info")
    # A search that has not answered yet can be cancelled.
    page.route("**/grep?*", lambda route: None)  # never answered
    page.fill("#grep-pattern", "ok")
    page.click("form[role=search] button[type=submit]")
    page.wait_for_selector("#grep-info.searching:has-text('Searching from byte')")
    page.click("#grep-cancel")
    page.wait_for_selector("#grep-info:has-text('Search cancelled')")
    assert page.is_hidden("#grep-cancel")


def test_a_malformed_id_gets_a_clear_page_and_failures_show_as_badges(
    page: Any, site: Site
) -> None:
    failed = output(site.store, b"boom\n", exit_code=3)
    sign_in(page, site, site.alice, "/artifacts/art_nope")
    page.wait_for_selector("h1:has-text('Not an artifact id')")
    page.goto(f"{site.url}/")
    page.wait_for_selector(f"tr[data-id='{failed}'] .badge.exit-failed:has-text('exit 3')")


def test_a_session_page_lists_what_the_model_saw_and_read_back(page: Any, site: Site) -> None:
    """The context ledger in the pages: a conversation's outputs in order with
    what the model was shown and read back, the totals on the front page, and
    the read-backs on an output's own page (a person's look counted apart)."""
    from overspill.api.agent.tools import ArtifactTools
    from overspill.api.client.in_process import InProcessClient
    from overspill.shell import ExecRequest, Executor, ShellSettings, StoreSink

    sink = StoreSink(site.store, ALICE, session_id="conv-ui")
    ex = Executor(ShellSettings(max_output_bytes=2_000, grace_ms=300, legacy_spill=False), sink)
    made = [ex.run(ExecRequest(command=c)).stdout.artifact for c in ("seq 1 50000", "seq 1 3000")]
    first, _ = (a.id for a in made if a is not None)
    tools = ArtifactTools(InProcessClient(site.store, ALICE), session_id="conv-ui")
    for offset in (0, 1000):
        tools.handle("artifact_read", {"id": first, "offset": offset, "limit": 1000})
    site.store.ledger.flush()
    sign_in(page, site, site.alice, "/sessions/conv-ui")
    page.wait_for_selector("table.session tbody tr")
    rows = page.locator("table.session tbody tr")
    assert rows.count() == 2
    assert rows.nth(0).locator("td").nth(0).inner_text() == first  # in the order made
    assert rows.nth(0).locator("td").nth(4).inner_text() == "2\u00d7 (1.95 KiB)"  # 2,000 bytes
    assert rows.nth(1).locator("td").nth(4).inner_text() == "never"
    assert "Kept out of context in this session" in page.inner_text("#ledger")
    page.goto(f"{site.url}/")
    page.wait_for_selector("#ledger .ledger-bar")
    assert "read back 2 times" in page.inner_text("#ledger")
    page.goto(f"{site.url}/artifacts/{first}")
    page.wait_for_selector("dl.meta:has-text('Read back')")
    page.wait_for_selector("dl.meta:has-text('artifact_read \u00d72')")
    meta = page.inner_text("dl.meta")
    assert "Shown inline" in meta and "kept out of the model's context" in meta
    # The page's own reads are a person's: they never count as the model's.
    site.store.ledger.flush()
    reads = site.store.reads_of(ALICE, first)
    assert sum(r.reads for r in reads if r.tool == "artifact_read") == 2
    assert any(r.tool == "ui" for r in reads)
