// One artifact: metadata, head and tail, line pages, search, and the actions on
// it. Every read is a bounded window from the API, so a 1 GB artifact opens as
// fast as a 1 KB one; content is only ever put into the page as text.

import { api, ApiError, get, getToken } from "./api.js";
import {
  clear, fill, confirmDialog, exitBadge, flash, formatBytes, formatTime, h,
  parseDuration, relative, stateBadge, tabs, textBlock, visible,
} from "./dom.js";

const HEAD_BYTES = 16 * 1024;
const TAIL_LINES = 200;
const PAGE_LINES = 200;
const PAGE_BYTES = 256 * 1024;
const LIVE_MS = 1500;
const HEX_BYTES = 4096;
const FAILURES = 10;
const GONE = new Set(["expired", "deleted"]);

function title(a) {
  return (a.source && a.source.command) || a.name || a.id;
}

// The same sentence as `overspill info` and artifact_info (shell/wording.py).
function redactionNote(r) {
  if (!r || typeof r !== "object") return null;
  if (r.off) return "off for this owner (an admin's policy): stored as printed";
  const n = Number(r.count) || 0;
  if (!n) return null;
  const rules = Object.keys(r.rules || {}).sort().join(", ");
  return `${n} ${n === 1 ? "secret" : "secrets"} masked (${rules}), ${Number(r.bytes) || 0} bytes; ` +
    "each masked with * at its own length (offsets unchanged)";  // shell/wording.py MASKED
}

// What was read back of the output afterwards (the context ledger), by tool;
// the web pages' own views apart.
function readBacks(reads) {
  if (!reads) return null;
  const byTool = new Map();
  let times = 0, bytes = 0, views = 0;
  for (const r of reads) {
    if (r.tool === "ui") { views += r.reads; continue; }
    times += r.reads;
    bytes += r.bytes;
    byTool.set(r.tool, (byTool.get(r.tool) || 0) + r.reads);
  }
  const tools = [...byTool].map(([t, n]) => `${t} ×${n}`).join(", ");
  const said = times ? `${times} ${times === 1 ? "time" : "times"} (${formatBytes(bytes)}): ${tools}` : "never";
  return views ? `${said}; viewed here ${views}×` : said;
}

function metadata(a, reads = null) {
  const src = a.source || {};
  const rows = [
    ["Id", h("code", {}, a.id)],
    ["State", [stateBadge(a.state), a.error ? ` ${a.error}` : ""]],
    ["Stored", `${formatBytes(a.size_bytes)} (${a.size_bytes.toLocaleString("en")} bytes)`],
    a.total_bytes > a.size_bytes
      ? ["Printed", `${formatBytes(a.total_bytes)}: ${formatBytes(a.total_bytes - a.size_bytes)} past the stored prefix were not kept`]
      : null,
    a.compressed
      ? ["On disk", `${formatBytes(a.stored_bytes)} as compressed frames` +
          (a.size_bytes ? ` (${(a.stored_bytes * 100 / a.size_bytes).toFixed(1)}% of the output)` : "")]
      : a.state !== "writing" && a.state !== "expired" && a.state !== "deleted"
        ? ["On disk", "as printed (hot: compacted once it goes unread for a while)"]
        : null,
    ["Lines", a.line_count.toLocaleString("en")],
    a.shown_bytes !== null && a.shown_bytes !== undefined
      ? ["Shown inline", `${formatBytes(a.shown_bytes)} when it was made; ${formatBytes(Math.max(0, a.total_bytes - a.shown_bytes))} kept out of the model's context`]
      : null,
    ["Read back", readBacks(reads)],
    ["Command", src.command ? h("code", {}, visible(src.command)) : null],
    ["Stream", src.stream],
    ["Exit", exitBadge(src)],
    ["Redacted", redactionNote(src.redactions)],
    ["Working dir", src.cwd ? h("code", {}, visible(src.cwd)) : null],
    ["Run", src.run_id ? h("code", {}, src.run_id) : null],
    ["Owner", a.owner],
    ["Session", a.session_id],
    ["Kind", a.kind],
    ["Name", a.name],
    ["Media type", a.media_type],
    ["Created", formatTime(a.created_at)],
    ["Completed", a.completed_at ? formatTime(a.completed_at) : null],
    ["Expires", a.pinned ? "never while pinned"
      : a.expires_at ? `${formatTime(a.expires_at)} (${relative(a.expires_at)})` : "never"],
    ["Retention", a.retention_source
      ? `${a.retention_source}${a.retention_clamped ? " — the request was clamped to the ceiling" : ""}` : null],
    a.pinned ? ["Pinned", `by ${a.pinned_by || "?"} ${formatTime(a.pinned_at)}${a.pin_reason ? ` — ${a.pin_reason}` : ""}`] : null,
    a.deleted_at ? ["Removed", `${formatTime(a.deleted_at)}${a.delete_reason ? ` — ${a.delete_reason}` : ""}`] : null,
    ["SHA-256", a.sha256 ? h("code", { class: "hash" }, a.sha256) : null],
  ];
  return h("dl", { class: "meta" },
    rows.filter((r) => r && r[1] !== null && r[1] !== undefined && r[1] !== "")
      .map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

// Highlight RE2's spans (code-point offsets into the line) without parsing markup.
function highlighted(text, spans) {
  const chars = Array.from(text);
  const out = [];
  let pos = 0;
  for (const [start, end] of spans) {
    if (start < pos) continue;
    out.push(visible(chars.slice(pos, start).join("")));
    out.push(h("mark", {}, visible(chars.slice(start, end).join(""))));
    pos = end;
  }
  out.push(visible(chars.slice(pos).join("")));
  return out;
}

// A failure pattern's spans on whole words, never cutting one: a span inside one
// word grows to the word ("eError" marks "AttributeError"); a span over several
// drops the pieces of words at its edges ("1 ERROR " after "12:00:01" marks
// "ERROR"); spaces and punctuation at the edges go.
const WORD = /[\p{L}\p{N}_]/u;
function wordSpans(text, spans) {
  const chars = Array.from(text);
  const isWord = (i) => i >= 0 && i < chars.length && WORD.test(chars[i]);
  return spans.map(([start, end]) => {
    const within = chars.slice(start, end);
    if (within.length && within.every((c) => WORD.test(c))) {
      while (isWord(start - 1)) start--;
      while (isWord(end)) end++;
      return [start, end];
    }
    if (isWord(start - 1)) while (start < end && isWord(start)) start++;
    if (isWord(end)) while (end > start && isWord(end - 1)) end--;
    while (start < end && !isWord(start)) start++;
    while (end > start && !isWord(end - 1)) end--;
    return [start, end];
  }).filter(([start, end]) => start < end);
}

function lineRow(line, { spans = null, match = false, onNumber = null } = {}) {
  const number = onNumber
    ? h("a", { class: "ln", href: `#lines:${line.number}`, onclick: (ev) => { ev.preventDefault(); onNumber(line.number); } }, String(line.number))
    : h("span", { class: "ln" }, String(line.number));
  return h("div", { class: match ? "line hit" : "line" },
    number,
    h("span", { class: "lt" }, spans ? highlighted(line.text, spans) : visible(line.text),
      line.truncated ? h("span", { class: "cut" }, " … (line cut)") : null));
}

// The tail window's text as numbered rows (``first`` is its first line's number).
function numbered(text, first) {
  const lines = text.split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  return lines.map((t, i) => lineRow({ number: first + i, text: t }));
}

// Text that is mostly not text: replacement characters (invalid UTF-8) or NULs.
function looksBinary(text) {
  if (!text) return false;
  let odd = 0;
  for (const ch of text) if (ch === "\uFFFD" || ch === "\u0000") odd += 1;
  return odd > 8 && odd * 100 > text.length;
}

async function rawBytes(path, start, end) {
  const response = await fetch(path, {
    headers: { Authorization: `Bearer ${getToken()}`, Range: `bytes=${start}-${Math.max(start, end - 1)}` },
    credentials: "omit",
    cache: "no-store",
  });
  if (!response.ok) throw new ApiError(response.status, "http_error", `${response.status} ${response.statusText}`);
  return new Uint8Array(await response.arrayBuffer());
}

// ``xxd``'s layout: offset, 16 bytes in hex, the printable ones as text.
function hexDump(bytes) {
  const rows = [];
  for (let i = 0; i < bytes.length; i += 16) {
    const chunk = bytes.slice(i, i + 16);
    const hex = Array.from(chunk, (b) => b.toString(16).padStart(2, "0")).join(" ");
    const text = Array.from(chunk, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : ".")).join("");
    rows.push(`${i.toString(16).padStart(8, "0")}  ${hex.padEnd(47)}  ${text}`);
  }
  return rows.join("\n");
}

export async function render(main, me, id) {
  let a;
  try {
    a = await get(`/v1/artifacts/${encodeURIComponent(id)}`);
  } catch (err) {
    if (err instanceof ApiError && (err.status === 400 || err.status === 422)) {
      document.title = "Not an artifact id · overspill";
      fill(main, h("h1", {}, "Not an artifact id"),
        h("p", {}, "Artifact ids look like art_ followed by 26 letters and digits: ", h("code", {}, id)),
        h("p", {}, h("a", { href: "/" }, "← All artifacts")));
      return;
    }
    if (err instanceof ApiError && err.status === 404) {
      document.title = "Not found · overspill";
      fill(main, h("h1", {}, "Not found"),
        h("p", {}, "No artifact with that id is visible to you."), h("p", {}, h("a", { href: "/" }, "← All artifacts")));
      return;
    }
    throw err;
  }
  document.title = `${title(a).slice(0, 60)} · overspill`;
  const base = `/v1/artifacts/${encodeURIComponent(a.id)}`;
  let reads = null;
  const metaBox = h("section", { class: "card", "aria-label": "Metadata" }, metadata(a));
  get(`${base}/reads`).then((r) => { reads = r; fill(metaBox, metadata(a, reads)); }).catch(() => {});
  const live = h("span", { class: "live", role: "status" });
  const heading = h("h1", { class: "title" }, visible(title(a)));

  // -- content panels -------------------------------------------------------------
  const headBox = h("div", {});
  const failuresBox = h("div", { id: "failures" });
  const tailBox = h("div", {});
  const overview = {
    label: "Head & tail",
    el: h("section", {}, failuresBox, tailBox, headBox),
    loaded: false,
    async show() {
      if (this.loaded) return;
      this.loaded = true;
      await refreshOverview();
    },
  };
  async function refreshOverview() {
    // Head and tail are independent windows: ask for both at once. The tail comes
    // first on the page (a log's end is what a person opens it for), numbered,
    // and scrolled to its last line.
    const [head, tail] = await Promise.all([
      get(`${base}/text`, { offset: 0, limit: HEAD_BYTES }),
      a.size_bytes > HEAD_BYTES ? get(`${base}/tail`, { lines: TAIL_LINES }) : null,
    ]);
    if (looksBinary(head.text)) {
      await showBinary();
      return;
    }
    const whole = head.eof && head.next_offset >= a.size_bytes;
    if (!whole) showFailures().catch(() => clear(failuresBox));  // a help, never a blocker
    fill(headBox,
      h("h2", {}, whole ? "Content" : "Head"),
      h("p", { class: "muted small" }, whole
        ? `All ${formatBytes(a.size_bytes)}.`
        : `First ${formatBytes(head.next_offset)} of ${formatBytes(a.size_bytes)}.`),
      textBlock(head.text, { id: "head-text", tabindex: "0", "aria-label": "Head of the content" }));
    if (whole || !tail) {
      clear(tailBox);
      return;
    }
    const rows = numbered(tail.text, tail.first_line || tail.line || 1);
    const pane = h("div", { class: "lines", id: "tail-text", tabindex: "0", "aria-label": "Tail of the content" }, rows);
    fill(tailBox,
      h("h2", {}, "Tail"),
      h("p", { class: "muted small" },
        `Last ${formatBytes(tail.size_bytes - tail.offset)}`,
        tail.first_line ? `, lines ${tail.first_line.toLocaleString("en")}–${a.line_count.toLocaleString("en")}` : "",
        tail.truncated ? " (cut to the read limit)" : "", ". ",
        h("button", { type: "button", class: "link", onclick: () => goToLastPage() }, "Last page of lines"),
        a.state === "writing" ? followToggle : null),
      pane);
    pane.scrollTop = pane.scrollHeight;
  }

  // The failure-like lines (the server's own patterns: what the model is quoted
  // from the part of an output it was not shown), each a link into Lines.
  async function showFailures() {
    const { pattern } = await get("/v1/failure-pattern");
    if (!pattern) return;
    const r = await get(`${base}/grep`, { pattern, max_matches: FAILURES, context: 0 });
    if (!r.matches.length) {
      clear(failuresBox);
      return;
    }
    const more = r.eof ? "" : ` (the first ${FAILURES}; Search finds the rest)`;
    fill(failuresBox,
      h("h2", {}, "Failure-like lines"),
      h("p", { class: "muted small" }, `${r.matches.length} line${r.matches.length === 1 ? "" : "s"} shaped like errors, failed tests, tracebacks and exceptions${more}.`),
      h("div", { class: "lines failures" }, r.matches.map((m) => lineRow(m.line, { spans: wordSpans(m.line.text, m.spans), match: true, onNumber: goToLine }))));
  }

  // Binary content is never shown as text: its first bytes as hex, and the size.
  async function showBinary() {
    clear(tailBox);
    const bytes = await rawBytes(`${base}/content`, 0, Math.min(a.size_bytes, HEX_BYTES));
    fill(headBox,
      h("h2", {}, "Binary content"),
      h("p", { class: "notice", id: "binary-notice" },
        `${formatBytes(a.size_bytes)} of binary data (not text): the first ${formatBytes(bytes.length)} as hex below; Download has all of it.`),
      h("pre", { class: "content hex", id: "hex-view", tabindex: "0", "aria-label": "Hex view" }, hexDump(bytes)));
  }

  const follow = h("input", { id: "follow", type: "checkbox", checked: true });
  const followToggle = h("span", { class: "check follow" }, follow, h("label", { for: "follow" }, "follow"));

  const linesOut = h("div", { class: "lines", id: "lines-out", tabindex: "0", "aria-label": "Lines" });
  const linesInfo = h("p", { class: "muted small", id: "lines-info" });
  const startInput = h("input", { id: "goto-line", type: "number", min: "1", value: "1", inputmode: "numeric" });
  const prevBtn = h("button", { type: "button", onclick: () => showLines(Math.max(1, linesState.start - PAGE_LINES)) }, "← Previous");
  const nextBtn = h("button", { type: "button", onclick: () => showLines(linesState.next) }, "Next →");
  const linesState = { start: 1, next: 1 };
  async function goToLastPage() {
    const fresh = await get(base);
    history.replaceState(null, "", `#lines:${Math.max(1, fresh.line_count - PAGE_LINES + 1)}`);
    panels.select("lines");
  }
  const lastBtn = h("button", { type: "button", onclick: () => goToLastPage().catch((err) => flash(err.message, "error")) }, "Last page");
  async function showLines(start) {
    const w = await get(`${base}/lines`, { start, count: PAGE_LINES, max_bytes: PAGE_BYTES });
    linesState.start = start;
    linesState.next = w.next_line;
    startInput.value = String(start);
    fill(linesOut, w.lines.map((l) => lineRow(l)));
    const last = w.lines.length ? w.lines[w.lines.length - 1].number : start - 1;
    linesInfo.textContent = w.lines.length
      ? `Lines ${start.toLocaleString("en")}–${last.toLocaleString("en")} of ${w.line_count.toLocaleString("en")}${w.complete ? "" : " so far"}.`
      : `No line ${start.toLocaleString("en")}: the artifact has ${w.line_count.toLocaleString("en")} lines.`;
    prevBtn.disabled = start <= 1;
    nextBtn.disabled = w.eof;
    history.replaceState(null, "", `#lines:${start}`);
  }
  const linesPanel = {
    label: "Lines",
    el: h("section", {},
      h("form", {
        class: "inline",
        onsubmit: (ev) => {
          ev.preventDefault();
          const n = Number(startInput.value);
          if (!Number.isInteger(n) || n < 1) {
            flash("Line numbers start at 1.", "error");
            return;
          }
          showLines(n).catch((err) => flash(err.message, "error"));
        },
      }, h("label", { for: "goto-line" }, "Go to line"), startInput, h("button", { type: "submit" }, "Go"),
      prevBtn, nextBtn, lastBtn),
      linesInfo, linesOut),
    loaded: false,
    // The line to show comes from the address (#lines:N), so a shared link and a
    // click on a search hit take the same single path.
    async show() {
      const m = location.hash.match(/^#lines:(\d+)$/);
      const start = m ? Math.max(1, Number(m[1])) : this.loaded ? linesState.start : 1;
      if (this.loaded && start === linesState.start) return;
      this.loaded = true;
      await showLines(start);
    },
  };

  const pattern = h("input", { id: "grep-pattern", name: "pattern", required: true, autocomplete: "off", placeholder: "error|FAIL" });
  const ignoreCase = h("input", { id: "grep-i", type: "checkbox" });
  const fixed = h("input", { id: "grep-f", type: "checkbox" });
  const context = h("select", { id: "grep-c" }, [0, 1, 2, 3, 5, 10].map((n) => h("option", { value: n, selected: n === 2 }, String(n))));
  const results = h("div", { class: "lines", id: "grep-results" });
  const grepInfo = h("p", { class: "muted small", id: "grep-info", role: "status" });
  const more = h("button", { type: "button", hidden: true }, "Continue search");
  // Previous / next among the matching lines shown, with where you are.
  const hitInfo = h("span", { class: "muted small", id: "hit-info" });
  let current = -1;
  const step = (by) => {
    const hits = [...results.querySelectorAll(".line.hit")];
    if (!hits.length) return;
    hits[current]?.classList.remove("current");
    current = (current + by + hits.length) % hits.length;
    hits[current].classList.add("current");
    hits[current].scrollIntoView({ block: "center" });
    hitInfo.textContent = `match ${current + 1} of ${hits.length} shown`;
  };
  const prevHit = h("button", { type: "button", id: "prev-hit", onclick: () => step(-1) }, "↑ Previous match");
  const nextHit = h("button", { type: "button", id: "next-hit", onclick: () => step(1) }, "↓ Next match");
  const hitNav = h("div", { class: "inline hits", hidden: true }, prevHit, nextHit, hitInfo);
  const cancel = h("button", { type: "button", id: "grep-cancel", hidden: true }, "Cancel");
  let running = null; // the AbortController of the search in flight
  const goToLine = (n) => {
    history.replaceState(null, "", `#lines:${n}`);
    panels.select("lines");
  };
  let found = 0;
  const shownLines = new Map();
  async function search(offset) {
    running?.abort();
    const controller = new AbortController();
    running = controller;
    if (offset === 0) {
      clear(results);  // stale results never stay under a new search or its error
      shownLines.clear();
      found = 0;
      more.hidden = true;
    }
    grepInfo.textContent = `Searching from byte ${formatBytes(offset)} of ${formatBytes(a.size_bytes)}…`;
    grepInfo.className = "small searching";
    cancel.hidden = false;
    let r;
    try {
      r = await api("GET", `${base}/grep`, {
        params: {
          pattern: pattern.value, ignore_case: ignoreCase.checked, fixed: fixed.checked,
          context: context.value, max_matches: 100, offset,
        },
        signal: controller.signal,
      });
    } catch (err) {
      if (err.name === "AbortError") {
        grepInfo.textContent = `Search cancelled at byte ${formatBytes(offset)}.`;
        grepInfo.className = "muted small";
        more.hidden = offset === 0;
        return;
      }
      grepInfo.textContent = err.message;
      grepInfo.className = "error small";
      return;
    } finally {
      if (running === controller) {
        running = null;
        cancel.hidden = true;
      }
    }
    grepInfo.className = "muted small";
    if (offset === 0) {
      clear(results);
      shownLines.clear();
      found = 0;
    }
    // Adjacent matches share context lines: each line is shown once, as a hit if
    // any match is on it.
    const put = (line, opts) => {
      const existing = shownLines.get(line.number);
      const row = lineRow(line, { ...opts, onNumber: goToLine });
      if (existing) {
        if (opts.match) existing.replaceWith(row);
        else return;
      } else {
        if (results.childElementCount && !shownLines.has(line.number - 1)) results.append(h("div", { class: "sep" }, "⋯"));
        results.append(row);
      }
      shownLines.set(line.number, row);
    };
    for (const m of r.matches) {
      for (const l of m.before) put(l, {});
      put(m.line, { spans: m.spans, match: true });
      for (const l of m.after) put(l, {});
    }
    found += r.matches.length;
    current = -1;
    hitInfo.textContent = "";
    hitNav.hidden = found === 0;
    const scanned = `bytes 0–${formatBytes(r.next_offset)} of ${formatBytes(a.size_bytes)}`;
    const whole = r.eof ? (r.complete ? " (all of it)" : " (all stored so far)") : "";
    grepInfo.textContent = found
      ? `${found} matching line${found === 1 ? "" : "s"} shown; searched ${scanned}${whole}.`
      : `No matches in ${scanned}${whole}.`;
    more.hidden = r.eof;
    more.onclick = () => search(r.next_offset).catch((err) => flash(err.message, "error"));
  }
  cancel.addEventListener("click", () => running?.abort());
  const searchPanel = {
    label: "Search",
    el: h("section", {},
      h("form", {
        class: "inline",
        role: "search",
        onsubmit: (ev) => {
          ev.preventDefault();
          search(0).catch((err) => flash(err.message, "error"));
        },
      },
      h("label", { for: "grep-pattern" }, "Pattern (RE2)"), pattern,
      h("span", { class: "check" }, ignoreCase, h("label", { for: "grep-i" }, "ignore case")),
      h("span", { class: "check" }, fixed, h("label", { for: "grep-f" }, "fixed string")),
      h("label", { for: "grep-c" }, "context"), context,
      h("button", { type: "submit", class: "primary" }, "Search"), cancel),
      grepInfo, hitNav, results, more),
    show() {},
  };

  // -- actions --------------------------------------------------------------------
  // Report an action once the page shows its result, never before.
  async function act(fn, done) {
    try {
      const result = await fn();
      await render(main, me, id);
      flash(typeof done === "function" ? done(result) : done);
    } catch (err) {
      flash(err.message, "error");
    }
  }
  const download = async () => {
    try {
      const link = await api("POST", `${base}/download-link`);
      const anchor = h("a", { href: link.url, download: "", hidden: true });
      document.body.append(anchor);
      anchor.click();
      anchor.remove();
    } catch (err) {
      flash(err.message, "error");
    }
  };
  const pin = async () => {
    const v = await confirmDialog({
      title: "Pin this artifact?",
      body: "A pinned artifact never expires and is never evicted, until someone unpins it.",
      confirm: "Pin",
      fields: [{ name: "reason", label: "Reason (optional)", placeholder: "e.g. incident 42" }],
    });
    if (v) await act(() => api("PUT", `${base}/pin`, { body: { reason: v.reason || null } }), "Pinned.");
  };
  const unpin = async () => {
    const v = await confirmDialog({ title: "Unpin this artifact?", body: "Its retention policy applies again; it may expire at once.", confirm: "Unpin" });
    if (v) await act(() => api("DELETE", `${base}/pin`), "Unpinned.");
  };
  const retain = async () => {
    const v = await confirmDialog({
      title: "Change retention",
      body: "Retention counts from when the artifact was created. A request above the ceiling is clamped to it, and you will be told.",
      confirm: "Apply",
      fields: [
        { name: "preset", label: "Keep for", value: "", options: [["", "the policy default"], ["3600", "1 hour"], ["86400", "1 day"], ["604800", "7 days"], ["2592000", "30 days"], ["7776000", "90 days"], ["forever", "forever (where allowed)"], ["custom", "custom…"]] },
        { name: "custom", label: "Custom (e.g. 12h, 14d)", placeholder: "only for custom…" },
      ],
    });
    if (!v) return;
    let retention;
    try {
      if (v.preset === "custom") retention = parseDuration(v.custom, "custom retention");
      else if (v.preset === "forever") retention = "forever";
      else retention = v.preset ? Number(v.preset) : null;
    } catch (err) {
      flash(err.message, "error");
      return;
    }
    await act(() => api("PATCH", base, { body: { retention } }), (r) =>
      `${r.retention_clamped ? "Clamped: expires" : "Expires"} ${r.expires_at ? formatTime(r.expires_at) : "never"} (${r.retention_source}).`);
  };
  const remove = async () => {
    const v = await confirmDialog({
      title: "Delete this artifact?",
      body: `Its ${formatBytes(a.size_bytes)} are removed now; a tombstone with who and when remains. This cannot be undone.`,
      confirm: "Delete",
      danger: true,
    });
    if (v) await act(() => api("DELETE", base), "Deleted.");
  };

  const gone = GONE.has(a.state);
  const actions = h("div", { class: "actions", role: "group", "aria-label": "Actions" },
    gone ? null : h("button", { type: "button", class: "primary", onclick: download }, "Download"),
    gone ? null : a.pinned
      ? h("button", { type: "button", onclick: unpin }, "Unpin")
      : h("button", { type: "button", onclick: pin }, "Pin…"),
    gone ? null : h("button", { type: "button", onclick: retain }, "Retention…"),
    gone ? null : h("button", { type: "button", class: "danger", onclick: remove }, "Delete…"));

  let panels = null;
  const body = [];
  if (gone) {
    body.push(h("p", { class: "notice" },
      `This artifact was ${a.state}${a.deleted_at ? ` ${formatTime(a.deleted_at)}` : ""}; its bytes are gone and only this record remains.`));
  } else {
    panels = tabs({ overview, lines: linesPanel, search: searchPanel }, "Views of the content");
    body.push(panels.list, overview.el, linesPanel.el, searchPanel.el);
  }

  // The content first, then the details: at 1280×800 the tail is on screen.
  fill(main,
    h("p", { class: "crumbs" }, h("a", { href: "/" }, "← All artifacts")),
    h("div", { class: "title-row" }, heading, stateBadge(a.state), exitBadge(a.source || {}), live),
    actions,
    ...body,
    h("h2", {}, "Details"),
    metaBox,
  );
  if (panels) {
    const initial = location.hash.startsWith("#lines:") ? "lines" : "overview";
    panels.select(initial);
  }

  // -- live updates while the artifact is still being written -----------------------
  if (a.state === "writing") {
    live.textContent = "● live: still being written";
    const timer = setInterval(async () => {
      if (!document.body.contains(live)) {
        clearInterval(timer);
        return;
      }
      try {
        const fresh = await get(base);
        const grew = fresh.size_bytes !== a.size_bytes || fresh.state !== a.state;
        a = fresh;
        fill(metaBox, metadata(a, reads));
        if (grew && overview.loaded && follow.checked) await refreshOverview();
        if (a.state !== "writing") {
          clearInterval(timer);
          live.textContent = `finished: ${a.state}`;
          if (GONE.has(a.state)) await render(main, me, id);
        }
      } catch (err) {
        clearInterval(timer);
        live.textContent = "";
        flash(err.message, "error");
      }
    }, LIVE_MS);
  }
}
