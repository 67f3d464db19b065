// One conversation (a harness's session id, as `run --session-id` and the hooks
// record it): its outputs in order, with what the model was shown of each and
// how often it read it back afterwards, and the conversation's totals.

import { get } from "./api.js";
import { fill, formatBytes, h, timeCell, visible } from "./dom.js";
import { ledgerCard } from "./list.js";

export async function render(main, me, sessionId) {
  document.title = `Session ${sessionId} · overspill`;
  const s = await get("/v1/stats", { session_id: sessionId, limit: 10 });
  const rows = s.outputs_list.map((o) => h("tr", {},
    h("td", { "data-label": "Output" }, h("a", { href: `/artifacts/${encodeURIComponent(o.id)}` }, o.id)),
    h("td", { "data-label": "Command" }, h("code", {}, visible(o.command || o.name || "—"))),
    h("td", { class: "num", "data-label": "Printed" }, formatBytes(o.total_bytes)),
    h("td", { class: "num", "data-label": "Shown" }, o.shown_bytes === null ? "—" : formatBytes(o.shown_bytes)),
    h("td", { class: "num", "data-label": "Read back" }, o.read_backs ? `${o.read_backs}× (${formatBytes(o.read_bytes)})` : "never"),
    h("td", { "data-label": "Made" }, timeCell(o.created_at))));
  fill(main,
    h("h1", {}, "Session ", h("code", {}, visible(sessionId))),
    h("p", { class: "muted" }, `${s.outputs} outputs of ${me.role === "admin" ? "every owner" : me.name}; `,
      h("a", { href: `/?session_id=${encodeURIComponent(sessionId)}` }, "see them in the list")),
    ledgerCard(s, "Kept out of context in this session"),
    rows.length
      ? h("div", { class: "table-wrap" }, h("table", { class: "artifacts session" },
        h("thead", {}, h("tr", {},
          ...["Output", "Command", "Printed", "Shown", "Read back", "Made"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, rows)))
      : h("p", { class: "empty" }, "No outputs of this session are stored."),
    s.hints.length ? h("ul", { class: "hints" }, s.hints.map((t) => h("li", {}, t))) : null);
}
