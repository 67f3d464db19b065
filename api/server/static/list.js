// The list of large outputs: filters and sort live in the URL (so a view can be
// bookmarked or shared), paging follows the API's cursors, and bulk pin/delete
// ask for confirmation first.

import { api, get } from "./api.js";
import {
  confirmDialog, exitBadge, fill, flash, formatBytes, h, parseBytes, stateBadge, timeCell,
} from "./dom.js";

const STATES = ["writing", "complete", "capped", "incomplete", "failed", "expired", "deleted"];
const PAGE = 50;

function readFilters() {
  const p = new URLSearchParams(location.search);
  return {
    session_id: p.get("session_id") || "",
    owner: p.get("owner") || "",
    state: p.get("state") || "",
    kind: p.get("kind") || "",
    min: p.get("min") || "",
    sort: p.get("sort") === "size" ? "size" : "created",
    order: p.get("order") === "asc" ? "asc" : "desc",
    cursor: p.get("cursor") || "",
  };
}

function urlFor(filters) {
  const p = new URLSearchParams();
  for (const [key, value] of Object.entries(filters)) if (value) p.set(key, value);
  if (p.get("sort") === "created") p.delete("sort");
  if (p.get("order") === "desc") p.delete("order");
  const s = p.toString();
  return s ? `/?${s}` : "/";
}

function filterForm(filters, me, owners) {
  const field = (name, label, input) =>
    h("div", { class: "field" }, h("label", { for: `f-${name}` }, label), input);
  const text = (name, placeholder, extra = {}) =>
    h("input", { id: `f-${name}`, name, value: filters[name], placeholder, autocomplete: "off", ...extra });
  const ownerInput = me.role === "admin"
    ? field("owner", "Owner", text("owner", "any owner", { list: "owners" }))
    : null;
  const error = h("p", { class: "error", role: "alert" });
  const form = h("form", {
    class: "filters",
    role: "search",
    "aria-label": "Filter artifacts",
    onsubmit: (ev) => {
      ev.preventDefault();
      const data = Object.fromEntries(new FormData(form).entries());
      if (data.min) {
        try {
          parseBytes(data.min, "minimum size");
        } catch (err) {
          error.textContent = err.message;
          return;
        }
      }
      const [sort, order] = (data.sortorder || "created:desc").split(":");
      delete data.sortorder;
      location.assign(urlFor({ ...data, sort, order }));
    },
  },
  field("session_id", "Session", text("session_id", "any session")),
  ownerInput,
  field("state", "State", h("select", { id: "f-state", name: "state" },
    h("option", { value: "" }, "live (not deleted)"),
    STATES.map((s) => h("option", { value: s, selected: filters.state === s }, s)))),
  field("kind", "Kind", text("kind", "any kind")),
  field("min", "Minimum size", text("min", "e.g. 10MB", { inputmode: "text" })),
  field("sortorder", "Sort", h("select", { id: "f-sortorder", name: "sortorder" },
    [["size:desc", "Largest first"], ["size:asc", "Smallest first"],
      ["created:desc", "Newest first"], ["created:asc", "Oldest first"]].map(([value, label]) =>
      h("option", { value, selected: `${filters.sort}:${filters.order}` === value }, label)))),
  h("div", { class: "field buttons" },
    h("button", { type: "submit", class: "primary" }, "Apply"),
    h("a", { href: "/", class: "button" }, "Reset")),
  error,
  owners.length ? h("datalist", { id: "owners" }, owners.map((o) => h("option", { value: o }))) : null);
  return form;
}

function sortHeader(label, key, filters) {
  const active = filters.sort === key;
  const nextOrder = active && filters.order === "desc" ? "asc" : "desc";
  const arrow = active ? (filters.order === "desc" ? " ↓" : " ↑") : "";
  return h("th", { scope: "col", "aria-sort": active ? (filters.order === "desc" ? "descending" : "ascending") : null },
    h("a", { href: urlFor({ ...filters, sort: key, order: nextOrder, cursor: "" }), class: "sort" }, label + arrow));
}

function sourceCell(a) {
  const src = a.source || {};
  const title = src.command || a.name || a.id;
  const meta = [src.stream, a.kind !== "output" ? a.kind : null].filter(Boolean).join(" · ");
  const badge = exitBadge(src);
  return h("td", { class: "source" },
    h("a", { href: `/artifacts/${encodeURIComponent(a.id)}`, class: "command", title }, title.length > 90 ? `${title.slice(0, 90)}…` : title),
    meta || badge ? h("div", { class: "muted small" }, badge, badge && meta ? " " : null, meta) : null);
}

function expiresCell(a) {
  const td = (content) => h("td", { "data-label": "Expires" }, content);
  if (a.state === "deleted" || a.state === "expired") return td("—");
  if (a.pinned) return td(h("span", { class: "badge pinned", title: a.pin_reason || "" }, "pinned"));
  return td(a.expires_at ? timeCell(a.expires_at) : "never");
}

// Pin or delete the selected artifacts after a confirmation; returns the
// [message, kind] to report, or null when the user cancelled.
async function bulk(action, selected, items) {
  const chosen = items.filter((a) => selected.has(a.id));
  const bytes = chosen.reduce((n, a) => n + a.size_bytes, 0);
  const noun = `${chosen.length} artifact${chosen.length === 1 ? "" : "s"} (${formatBytes(bytes)})`;
  const answer = action === "delete"
    ? await confirmDialog({
      title: `Delete ${noun}?`,
      body: "Their bytes are removed now; a tombstone with who and when remains. This cannot be undone.",
      confirm: "Delete",
      danger: true,
    })
    : await confirmDialog({
      title: `Pin ${noun}?`,
      body: "Pinned artifacts never expire and are never evicted, until unpinned.",
      confirm: "Pin",
      fields: [{ name: "reason", label: "Reason (optional)", placeholder: "e.g. incident 42" }],
    });
  if (!answer) return null;
  const failed = [];
  for (const a of chosen) {
    try {
      if (action === "delete") await api("DELETE", `/v1/artifacts/${a.id}`);
      else await api("PUT", `/v1/artifacts/${a.id}/pin`, { body: { reason: answer.reason || null } });
    } catch (err) {
      failed.push(`${a.id}: ${err.message}`);
    }
  }
  const done = chosen.length - failed.length;
  const verb = action === "delete" ? "Deleted" : "Pinned";
  return failed.length
    ? [`${verb} ${done}; failed: ${failed.join("; ")}`, "error"]
    : [`${verb} ${done} artifact${done === 1 ? "" : "s"}.`, "info"];
}

export async function render(main, me) {
  document.title = "Artifacts · overspill";
  const filters = readFilters();
  let minSize = null;
  try {
    minSize = filters.min ? parseBytes(filters.min, "minimum size") : null;
  } catch (err) {
    flash(err.message, "error");
  }
  const gone = filters.state === "expired" || filters.state === "deleted";
  const [page, usage, ledger] = await Promise.all([
    get("/v1/artifacts", {
      session_id: filters.session_id,
      owner: me.role === "admin" ? filters.owner : null,
      state: filters.state,
      kind: filters.kind,
      min_size: minSize,
      include_gone: gone,
      sort: filters.sort,
      order: filters.order,
      limit: PAGE,
      cursor: filters.cursor,
    }),
    me.role === "admin" ? get("/v1/admin/usage").catch(() => []) : Promise.resolve([]),
    get("/v1/stats", { since_s: 7 * 86400, limit: 3 }).catch(() => null),  // a help, never a blocker
  ]);
  const items = page.items;
  const selected = new Set();
  const bulkButtons = [];
  const count = h("span", { class: "muted" });
  const refreshBulk = () => {
    for (const b of bulkButtons) b.disabled = selected.size === 0;
    count.textContent = selected.size ? `${selected.size} selected` : "";
  };
  const selectAll = h("input", {
    type: "checkbox",
    "aria-label": "Select all on this page",
    onchange: () => {
      for (const box of main.querySelectorAll("input.select-row")) {
        box.checked = selectAll.checked;
        if (box.checked) selected.add(box.value);
        else selected.delete(box.value);
      }
      refreshBulk();
    },
  });
  for (const [action, label, cls] of [["pin", "Pin selected…", ""], ["delete", "Delete selected…", "danger"]]) {
    bulkButtons.push(h("button", {
      type: "button",
      class: cls,
      disabled: true,
      onclick: async () => {
        const outcome = await bulk(action, selected, items);
        if (!outcome) return;
        await render(main, me);  // report once the list shows the result
        flash(...outcome);
      },
    }, label));
  }

  const rows = items.map((a) => h("tr", { dataset: { id: a.id } },
    h("td", { class: "pick" }, h("input", {
      type: "checkbox",
      class: "select-row",
      value: a.id,
      "aria-label": `Select ${a.id}`,
      disabled: a.state === "deleted" || a.state === "expired",
      onchange: (ev) => {
        if (ev.target.checked) selected.add(a.id);
        else selected.delete(a.id);
        refreshBulk();
      },
    })),
    h("td", { class: "num", "data-label": "Size" }, formatBytes(a.size_bytes),
      a.total_bytes > a.size_bytes ? h("div", { class: "muted small" }, `of ${formatBytes(a.total_bytes)} printed`) : null),
    sourceCell(a),
    h("td", { "data-label": "Owner" }, a.owner),
    h("td", { "data-label": "Session" }, a.session_id
      ? h("a", { href: `/sessions/${encodeURIComponent(a.session_id)}` }, a.session_id) : "—"),
    h("td", { "data-label": "State" }, stateBadge(a.state)),
    h("td", { "data-label": "Created" }, timeCell(a.created_at)),
    expiresCell(a)));

  const table = items.length
    ? h("div", { class: "table-wrap" }, h("table", { class: "artifacts" },
      h("thead", {}, h("tr", {},
        h("th", { scope: "col" }, selectAll),
        sortHeader("Size", "size", filters),
        h("th", { scope: "col" }, "Source"),
        h("th", { scope: "col" }, "Owner"),
        h("th", { scope: "col" }, "Session"),
        h("th", { scope: "col" }, "State"),
        sortHeader("Created", "created", filters),
        h("th", { scope: "col" }, "Expires"))),
      h("tbody", {}, rows)))
    : h("p", { class: "empty" }, "No artifacts match. Outputs larger than the executor's window show up here once a command overflows it.");

  const pager = h("nav", { class: "pager", "aria-label": "Pages" },
    filters.cursor ? h("a", { href: urlFor({ ...filters, cursor: "" }), class: "button" }, "← First page") : null,
    page.next_cursor ? h("a", { href: urlFor({ ...filters, cursor: page.next_cursor }), class: "button", rel: "next" }, "Next page →") : null);

  fill(main,
    h("h1", {}, "Large outputs"),
    ledger ? ledgerCard(ledger) : null,
    filterForm(filters, me, usage.map((u) => u.owner)),
    h("p", { class: "summary", id: "summary" },
      `${items.length} on this page`,
      page.total_bytes !== null && page.total_bytes !== undefined
        ? ` · ${formatBytes(page.total_bytes)} stored in all that match this filter` : ""),
    h("div", { class: "bulk" }, bulkButtons, count),
    table,
    pager,
  );
}

// The context ledger: what models were shown inline beside what overspill kept
// out of their context, as one bar, and the read-backs. (Widths go through
// the CSSOM: the pages' CSP refuses style attributes.)
export function ledgerCard(s, title = "Kept out of context, last 7 days") {
  const total = s.bytes_shown + s.bytes_kept_out;
  const part = (cls, n) => {
    const el = h("span", { class: cls });
    el.style.width = `${(total ? (100 * n) / total : 0).toFixed(1)}%`;
    return el;
  };
  const bar = h("div", { class: "ledger-bar", role: "img",
    "aria-label": `${formatBytes(s.bytes_shown)} shown, ${formatBytes(s.bytes_kept_out)} kept out` },
    part("shown", s.bytes_shown), part("kept", s.bytes_kept_out));
  return h("section", { class: "card ledger", id: "ledger", "aria-label": "Context ledger" },
    h("h2", {}, title),
    bar,
    h("p", { class: "small" },
      h("span", { class: "key shown" }), ` shown inline ${formatBytes(s.bytes_shown)} · `,
      h("span", { class: "key kept" }), ` kept out ${formatBytes(s.bytes_kept_out)} `,
      h("span", { class: "muted" }, `(~${s.tokens_kept_out_estimate.toLocaleString("en")} tokens, estimated as bytes/4)`),
      ` · ${s.model_outputs} outputs · read back ${s.read_backs} times`));
}
