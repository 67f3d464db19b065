// Admin pages: retention policies (a change is previewed before it can be
// saved), usage by owner, tokens, the audit log and cleanup (dry run first).

import { api, get } from "./api.js";
import {
  confirmDialog, fill, flash, formatBytes, formatDuration, formatTime, h, parseBytes,
  parseDuration, tabs, timeCell,
} from "./dom.js";

const enc = encodeURIComponent;

function table(headers, rows, attrs = {}) {
  return h("div", { class: "table-wrap" }, h("table", attrs,
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, rows)));
}

function counts(c) {
  return c.artifacts ? `${c.artifacts} (${formatBytes(c.bytes)})` : "0";
}

// -- retention ------------------------------------------------------------------------

function policyForm(view, scope, onSaved) {
  const isGlobal = scope === null;
  const f = {
    default: h("input", { id: "p-default", value: formatDuration(view.default_retention_s), placeholder: isGlobal ? "server default" : "inherit", autocomplete: "off" }),
    max: h("input", { id: "p-max", value: formatDuration(view.max_retention_s), placeholder: isGlobal ? "no ceiling" : "inherit", autocomplete: "off" }),
    forever: h("input", { id: "p-forever", type: "checkbox", checked: view.allow_forever }),
    quota: h("input", { id: "p-quota", value: view.quota_bytes ?? "", placeholder: isGlobal ? "no quota" : "inherit", autocomplete: "off" }),
    maxBytes: h("input", { id: "p-maxbytes", value: view.max_artifact_bytes ?? "", placeholder: isGlobal ? "server cap" : "inherit", autocomplete: "off" }),
    over: h("select", { id: "p-over" }, ["reject", "evict"].map((v) => h("option", { value: v, selected: view.over_quota === v }, v))),
    apply: h("input", { id: "p-apply", type: "checkbox" }),
    // Whether output is masked before it is stored (off only where an admin allows).
    redact: h("select", { id: "p-redact" },
      [["", isGlobal ? "on (the default)" : "inherit"], ["on", "on: mask secrets"], ["off", "off: store as printed (audited)"]]
        .map(([v, label]) => h("option", { value: v, selected: (view.redact === true ? "on" : view.redact === false ? "off" : "") === v }, label))),
  };
  const out = h("div", { id: "preview", "aria-live": "polite" });
  const error = h("p", { class: "error", role: "alert" });
  const save = h("button", { type: "button", class: "primary", disabled: true, id: "policy-save" }, "Save policy");
  const previewBtn = h("button", { type: "submit", id: "policy-preview" }, "Preview");

  const spec = () => ({
    default_retention_s: f.default.value.trim() ? parseDuration(f.default.value, "default retention") : null,
    max_retention_s: f.max.value.trim() ? parseDuration(f.max.value, "maximum retention") : null,
    allow_forever: f.forever.checked,
    quota_bytes: f.quota.value.trim() ? parseBytes(f.quota.value, "quota") : null,
    max_artifact_bytes: f.maxBytes.value.trim() ? parseBytes(f.maxBytes.value, "artifact size cap") : null,
    over_quota: f.over.value,
    redact: f.redact.value === "" ? null : f.redact.value === "on",
  });
  const stale = () => {
    save.disabled = true;
    if (out.firstChild) fill(out, h("p", { class: "muted" }, "Values changed: preview again before saving."));
  };
  const form = h("form", {
    class: "policy",
    oninput: stale,
    onchange: stale,
    onsubmit: async (ev) => {
      ev.preventDefault();
      error.textContent = "";
      let body;
      try {
        body = spec();
      } catch (err) {
        error.textContent = err.message;
        return;
      }
      try {
        const p = await api("POST", "/v1/admin/retention/preview", { body: { ...body, owner: scope } });
        const rows = p.owners.map((o) => h("tr", {}, h("td", {}, o.owner), h("td", {}, counts(o.now)), h("td", {}, counts(o.within_24h)), h("td", {}, counts(o.within_7d))));
        rows.push(h("tr", { class: "total" }, h("th", { scope: "row" }, "With this policy"), h("td", {}, counts(p.total.now)), h("td", {}, counts(p.total.within_24h)), h("td", {}, counts(p.total.within_7d))));
        rows.push(h("tr", { class: "muted" }, h("th", { scope: "row" }, "With the current policy"), h("td", {}, counts(p.current_total.now)), h("td", {}, counts(p.current_total.within_24h)), h("td", {}, counts(p.current_total.within_7d))));
        fill(out, 
          h("h3", {}, "What would expire if this applied to existing artifacts"),
          table(["Owner", "Now", "Within 24 h", "Within 7 d"], rows, { class: "preview" }),
          h("p", { class: "muted small" }, f.apply.checked
            ? "“Apply to existing” is ticked: saving recomputes the expiry of existing unpinned artifacts as shown."
            : "Saving applies to new artifacts only; tick “Apply to existing” to recompute existing ones."));
        save.disabled = false;
      } catch (err) {
        error.textContent = err.message;
      }
    },
  },
  h("div", { class: "grid" },
    h("label", { for: "p-default" }, "Default retention"), f.default,
    h("label", { for: "p-max" }, "Maximum retention (ceiling)"), f.max,
    h("label", { for: "p-quota" }, "Quota per owner"), f.quota,
    h("label", { for: "p-maxbytes" }, "Largest artifact"), f.maxBytes,
    h("label", { for: "p-over" }, "Over quota"), f.over,
    h("label", { for: "p-redact" }, "Redaction"), f.redact,
    h("span", {}), h("span", { class: "check" }, f.forever, h("label", { for: "p-forever" }, "Allow “forever”")),
    h("span", {}), h("span", { class: "check" }, f.apply, h("label", { for: "p-apply" }, "Apply to existing artifacts"))),
  h("p", { class: "muted small" }, "Durations like 12h, 7d, 2w; sizes like 500MB, 10GiB. Empty fields ",
    isGlobal ? "use the server's defaults." : "inherit the global policy."),
  error,
  h("div", { class: "actions" }, previewBtn, save),
  out);
  save.addEventListener("click", async () => {
    try {
      const path = isGlobal ? "/v1/admin/retention" : `/v1/admin/retention/owners/${enc(scope)}`;
      const r = await api("PUT", path, { body: { ...spec(), apply_to_existing: f.apply.checked } });
      const applied = f.apply.checked ? `; ${r.updated_artifacts} existing artifacts updated` : "";
      // The audit log's own entry for this change, so the admin sees it was recorded.
      const [entry] = await get("/v1/admin/audit", { action: "policy", limit: 1, ...(isGlobal ? {} : { owner: scope }) });
      await onSaved();
      const recorded = entry ? ` Audit log: ${entry.action} by ${entry.actor}, ${formatTime(entry.at)}.` : "";
      flash(`Saved the ${isGlobal ? "global" : scope} policy${applied}.${recorded}`);
    } catch (err) {
      error.textContent = err.message;
    }
  });
  return form;
}

function retentionPanel() {
  const el = h("section", {});
  const editor = h("div", { class: "card", id: "policy-editor" });
  async function edit(scope) {
    const view = await get(scope === null ? "/v1/admin/retention" : `/v1/admin/retention/owners/${enc(scope)}`)
      .catch((err) => (err.status === 404 ? { owner: scope, allow_forever: false, over_quota: "reject" } : Promise.reject(err)));
    fill(editor, 
      h("h2", {}, scope === null ? "Global policy" : `Policy for ${scope}`),
      view.updated_at ? h("p", { class: "muted small" }, `Last changed ${formatTime(view.updated_at)} by ${view.updated_by}.`) : null,
      policyForm(view, scope, load));
    editor.querySelector("input")?.focus();
  }
  async function load() {
    const owners = await get("/v1/admin/retention/owners");
    const ownerInput = h("input", { id: "new-owner", placeholder: "agent:ci-bot", autocomplete: "off", required: true });
    const rows = owners.map((p) => h("tr", {},
      h("td", {}, p.owner),
      h("td", {}, formatDuration(p.default_retention_s) || "inherit"),
      h("td", {}, formatDuration(p.max_retention_s) || "inherit"),
      h("td", {}, p.quota_bytes !== null ? formatBytes(p.quota_bytes) : "inherit"),
      h("td", {}, p.over_quota),
      h("td", {},
        h("button", { type: "button", onclick: () => edit(p.owner) }, "Edit"), " ",
        h("button", {
          type: "button",
          class: "danger",
          onclick: async () => {
            const ok = await confirmDialog({ title: `Remove the policy for ${p.owner}?`, body: "The global policy applies to this owner again (for new artifacts).", confirm: "Remove", danger: true });
            if (!ok) return;
            await api("DELETE", `/v1/admin/retention/owners/${enc(p.owner)}`);
            await load();
            flash(`Removed the policy for ${p.owner}.`);
          },
        }, "Remove"))));
    fill(el, 
      editor,
      h("section", { class: "card" },
        h("h2", {}, "Owner policies"),
        owners.length
          ? table(["Owner", "Default", "Ceiling", "Quota", "Over quota", ""], rows)
          : h("p", { class: "muted" }, "No owner has a policy of its own; the global policy applies to all."),
        h("form", {
          class: "inline",
          onsubmit: (ev) => {
            ev.preventDefault();
            edit(ownerInput.value.trim()).catch((err) => flash(err.message, "error"));
          },
        }, h("label", { for: "new-owner" }, "Owner"), ownerInput, h("button", { type: "submit" }, "Set a policy for this owner"))),
      h("p", {}, h("button", { type: "button", class: "link", onclick: () => edit(null) }, "Edit the global policy")));
    await edit(null);
  }
  return { label: "Retention", el, show: load };
}

// -- usage, tokens, audit, cleanup ------------------------------------------------------

function usagePanel() {
  const el = h("section", {});
  async function show() {
    const rows = await get("/v1/admin/usage");
    const total = rows.reduce((n, r) => n + r.bytes, 0);
    fill(el, h("section", { class: "card" },
      h("h2", {}, "Usage by owner"),
      h("p", { class: "summary" }, `${formatBytes(total)} stored by ${rows.length} owner${rows.length === 1 ? "" : "s"}.`),
      table(["Owner", "Stored", "Artifacts", "By state"], rows.map((r) => h("tr", {},
        h("td", {}, h("a", { href: `/?owner=${enc(r.owner)}&sort=size` }, r.owner)),
        h("td", { class: "num" }, formatBytes(r.bytes)),
        h("td", { class: "num" }, String(r.artifacts)),
        h("td", {}, Object.entries(r.by_state).map(([s, c]) => `${s} ${c.artifacts}${c.bytes ? ` (${formatBytes(c.bytes)})` : ""}`).join(", ")))))));
  }
  return { label: "Usage", el, show };
}

function tokensPanel() {
  const el = h("section", {});
  async function show() {
    const tokens = await get("/v1/admin/tokens");
    const principal = h("input", { id: "t-principal", placeholder: "agent:ci-bot", required: true, autocomplete: "off" });
    const role = h("select", { id: "t-role" }, ["agent", "user", "admin"].map((r) => h("option", { value: r }, r)));
    const label = h("input", { id: "t-label", placeholder: "optional", autocomplete: "off" });
    const expires = h("input", { id: "t-expires", placeholder: "never (or 30d)", autocomplete: "off" });
    const issued = h("div", { id: "issued", "aria-live": "polite" });
    const rows = tokens.map((t) => h("tr", { class: t.revoked_at ? "muted" : "" },
      h("td", {}, h("code", {}, t.id)),
      h("td", {}, t.principal),
      h("td", {}, t.role),
      h("td", {}, t.label || ""),
      h("td", {}, timeCell(t.created_at)),
      h("td", {}, t.expires_at ? timeCell(t.expires_at) : "never"),
      h("td", {}, t.last_used_at ? timeCell(t.last_used_at) : "never"),
      h("td", {}, t.revoked_at ? `revoked ${formatTime(t.revoked_at)}` : h("button", {
        type: "button",
        class: "danger",
        onclick: async () => {
          const ok = await confirmDialog({ title: `Revoke ${t.id} (${t.principal})?`, body: "It stops working at once, including download links made with it.", confirm: "Revoke", danger: true });
          if (!ok) return;
          await api("DELETE", `/v1/admin/tokens/${enc(t.id)}`);
          await show();
          flash(`Revoked ${t.id}.`);
        },
      }, "Revoke"))));
    fill(el, 
      h("section", { class: "card" },
        h("h2", {}, "New token"),
        h("form", {
          class: "inline",
          onsubmit: async (ev) => {
            ev.preventDefault();
            try {
              const body = { principal: principal.value.trim(), role: role.value, label: label.value.trim() || null };
              if (expires.value.trim()) body.expires_in_s = parseDuration(expires.value, "expires in");
              const r = await api("POST", "/v1/admin/tokens", { body });
              await show();
              const secret = h("input", { id: "new-token", readonly: true, value: r.token, class: "secret", "aria-label": "The new token" });
              el.querySelector("#issued").append(h("div", { class: "notice" },
                h("p", {}, `Token for ${r.info.principal} (${r.info.role}). Copy it now: it is not shown again.`), secret));
              secret.select();
            } catch (err) {
              flash(err.message, "error");
            }
          },
        },
        h("label", { for: "t-principal" }, "Principal"), principal,
        h("label", { for: "t-role" }, "Role"), role,
        h("label", { for: "t-label" }, "Label"), label,
        h("label", { for: "t-expires" }, "Expires in"), expires,
        h("button", { type: "submit", class: "primary" }, "Create token")),
        issued),
      h("section", { class: "card" },
        h("h2", {}, "Tokens"),
        h("p", { class: "muted small" }, "Only a hash of each token is stored; a lost token cannot be shown again, only revoked."),
        table(["Id", "Principal", "Role", "Label", "Created", "Expires", "Last used", ""], rows)));
  }
  return { label: "Tokens", el, show };
}

function auditPanel() {
  const el = h("section", {});
  const filters = { artifact_id: "", owner: "", action: "" };
  async function show(before = null) {
    const entries = await get("/v1/admin/audit", { ...filters, before_id: before, limit: 50 });
    const inputs = Object.fromEntries(Object.keys(filters).map((k) => [k, h("input", { id: `a-${k}`, value: filters[k], autocomplete: "off" })]));
    fill(el, h("section", { class: "card" },
      h("h2", {}, "Audit log"),
      h("form", {
        class: "inline",
        onsubmit: (ev) => {
          ev.preventDefault();
          for (const k of Object.keys(filters)) filters[k] = inputs[k].value.trim();
          show().catch((err) => flash(err.message, "error"));
        },
      },
      h("label", { for: "a-artifact_id" }, "Artifact"), inputs.artifact_id,
      h("label", { for: "a-owner" }, "Owner"), inputs.owner,
      h("label", { for: "a-action" }, "Action"), inputs.action,
      h("button", { type: "submit" }, "Filter")),
      entries.length
        ? table(["When", "Actor", "Action", "Artifact", "Owner", "Details"], entries.map((e) => h("tr", {},
          h("td", {}, timeCell(e.at)),
          h("td", {}, e.actor),
          h("td", {}, e.action),
          h("td", {}, e.artifact_id ? h("a", { href: `/artifacts/${enc(e.artifact_id)}` }, h("code", {}, e.artifact_id)) : ""),
          h("td", {}, e.owner || ""),
          h("td", {}, h("code", { class: "details" }, JSON.stringify(e.details))))))
        : h("p", { class: "muted" }, "Nothing recorded for this filter."),
      h("nav", { class: "pager" },
        before !== null ? h("button", { type: "button", onclick: () => show() }, "← Newest") : null,
        entries.length === 50 ? h("button", { type: "button", onclick: () => show(entries[entries.length - 1].id) }, "Older →") : null)));
  }
  return { label: "Audit log", el, show: () => show() };
}

function cleanupPanel() {
  const el = h("section", {});
  const report = h("div", { id: "cleanup-report", "aria-live": "polite" });
  const run = h("button", { type: "button", class: "danger", disabled: true, id: "cleanup-run" }, "Run cleanup now…");
  const labels = {
    expired: "artifacts past their expiry", expired_bytes: "bytes in them", purged: "tombstones purged",
    bytes_freed: "bytes freed", tombstones_removed: "old tombstones removed", writers_finalised: "dead writers finalised",
    orphan_blobs: "orphan blobs", orphan_bytes: "orphan bytes", partial_uploads: "partial uploads", legacy_spill_files: "legacy spill files",
  };
  const show = (r) => {
    const rows = Object.entries(labels).map(([k, text]) => h("tr", {}, h("th", { scope: "row" }, text),
      h("td", { class: "num" }, k.endsWith("bytes") || k === "bytes_freed" ? formatBytes(r[k]) : String(r[k]))));
    fill(report, 
      h("h3", {}, r.dry_run ? "Dry run: what cleanup would do now" : "Cleanup done"),
      table(["", r.dry_run ? "Would" : "Did"], rows),
      r.errors.length ? h("p", { class: "error" }, `Errors: ${r.errors.join("; ")}`) : null,
      r.artifact_ids.length ? h("p", { class: "small" }, "First artifacts: ",
        r.artifact_ids.map((id, i) => [i ? ", " : "", h("a", { href: `/artifacts/${enc(id)}` }, id)])) : null);
  };
  run.addEventListener("click", async () => {
    const ok = await confirmDialog({ title: "Run cleanup now?", body: "Expired artifacts become tombstones and their bytes are deleted, as the dry run showed.", confirm: "Run cleanup", danger: true });
    if (!ok) return;
    try {
      show(await api("POST", "/v1/admin/cleanup", { body: { dry_run: false } }));
      run.disabled = true;
    } catch (err) {
      flash(err.message, "error");
    }
  });
  fill(el, h("section", { class: "card" },
    h("h2", {}, "Cleanup"),
    h("p", {}, "The server sweeps on its own every few minutes. Run a dry run to see what a sweep would do now; then run it."),
    h("div", { class: "actions" },
      h("button", {
        type: "button",
        class: "primary",
        id: "cleanup-dry",
        onclick: async () => {
          try {
            show(await api("POST", "/v1/admin/cleanup", { body: { dry_run: true } }));
            run.disabled = false;
          } catch (err) {
            flash(err.message, "error");
          }
        },
      }, "Dry run"),
      run),
    report));
  return { label: "Cleanup", el, show() {} };
}

export async function render(main, me) {
  document.title = "Admin · overspill";
  if (me.role !== "admin") {
    fill(main, h("h1", {}, "Admin"), h("p", {}, "These pages need an admin token."));
    return;
  }
  const panels = {
    retention: retentionPanel(),
    usage: usagePanel(),
    tokens: tokensPanel(),
    audit: auditPanel(),
    cleanup: cleanupPanel(),
  };
  const t = tabs(panels, "Admin sections");
  fill(main, h("h1", {}, "Admin"), t.list, ...Object.values(panels).map((p) => p.el));
  const wanted = location.hash.slice(1);
  t.select(wanted in panels ? wanted : "retention");
}
