// DOM building and formatting. Nothing here ever parses a string as HTML: text
// goes into text nodes, so an artifact that contains markup shows as markup.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

// Every piece of text the UI shows goes through here, so metadata (names,
// sessions, commands, pin reasons, audit details, token labels) is as inert as
// content: control characters and bidi overrides come out as visible escapes.
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    if (child instanceof Node) {
      el.append(child);
      continue;
    }
    const text = String(child);
    if (!CONTROL_TEST.test(text)) {
      el.append(document.createTextNode(text));
      continue;
    }
    for (const piece of visible(text)) {
      el.append(piece instanceof Node ? piece : document.createTextNode(piece));
    }
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

// Replace an element's children (null and false children are skipped).
export function fill(el, ...children) {
  return append(clear(el), children);
}

// Control characters (terminal escapes included) and bidi overrides are shown as
// escapes in their own style: the text stays inert and cannot reorder, recolour or
// hide what is around it. Returns children for h()/append().
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const CONTROL_TEST = new RegExp(CONTROL.source);

export function visible(text) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(CONTROL)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const code = m[0].charCodeAt(0);
    const escape = code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
    out.push(h("span", { class: "ctl", title: `control character U+${code.toString(16).toUpperCase().padStart(4, "0")}` }, escape));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

export function textBlock(text, attrs = {}) {
  return h("pre", { class: "content", ...attrs }, visible(text));
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

export function formatBytes(n) {
  if (n === null || n === undefined) return "—";
  let value = Number(n);
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 2 : 1)} ${UNITS[unit]}`;
}

const SIZE_FACTORS = {
  "": 1, b: 1,
  k: 1e3, kb: 1e3, kib: 1024,
  m: 1e6, mb: 1e6, mib: 1024 ** 2,
  g: 1e9, gb: 1e9, gib: 1024 ** 3,
  t: 1e12, tb: 1e12, tib: 1024 ** 4,
};

// "1500", "10k", "2.5 MB", "1GiB" -> bytes; throws with a message naming the problem.
export function parseBytes(input, what = "size") {
  const m = String(input).trim().toLowerCase().match(/^(\d+(?:\.\d+)?)\s*([a-z]*)$/);
  if (!m || !(m[2] in SIZE_FACTORS)) {
    throw new Error(`${what}: "${input}" is not a size (e.g. 500000, 10MB, 1.5GiB)`);
  }
  return Math.round(Number(m[1]) * SIZE_FACTORS[m[2]]);
}

const DURATIONS = { s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };

// "3600", "90m", "12h", "7d", "2w" -> seconds.
export function parseDuration(input, what = "duration") {
  const m = String(input).trim().toLowerCase().match(/^(\d+(?:\.\d+)?)\s*([smhdwy]?)$/);
  const seconds = m ? Math.round(Number(m[1]) * DURATIONS[m[2] || "s"]) : 0;
  if (!m || seconds <= 0) {
    throw new Error(`${what}: "${input}" is not a duration (e.g. 3600, 12h, 7d, 2w)`);
  }
  return seconds;
}

export function formatDuration(seconds) {
  if (seconds === null || seconds === undefined) return "";
  for (const [unit, size] of [["y", 31536000], ["w", 604800], ["d", 86400], ["h", 3600], ["m", 60]]) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}

export function formatTime(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function relative(iso, now = Date.now()) {
  if (!iso) return "—";
  const diff = (new Date(iso).getTime() - now) / 1000;
  const abs = Math.abs(diff);
  let text;
  if (abs < 60) text = `${Math.round(abs)} s`;
  else if (abs < 3600) text = `${Math.round(abs / 60)} min`;
  else if (abs < 86400) text = `${Math.round(abs / 3600)} h`;
  else text = `${Math.round(abs / 86400)} d`;
  return diff >= 0 ? `in ${text}` : `${text} ago`;
}

export function timeCell(iso) {
  return iso ? h("time", { datetime: iso, title: formatTime(iso) }, relative(iso)) : "—";
}

export function stateBadge(state) {
  return h("span", { class: `badge state-${state}` }, state);
}

// The exit status as a badge: a failed run is visible at a glance in a list.
export function exitBadge(source) {
  const text = exitSummary(source);
  if (!text) return null;
  const ok = source.exit_code === 0 && !source.signal && !source.timed_out;
  return h("span", { class: `badge ${ok ? "exit-ok" : "exit-failed"}`, title: text }, text);
}

export function exitSummary(source) {
  if (!source) return "";
  if (source.timed_out) return "timed out";
  if (source.signal) return `killed by ${source.signal}`;
  if (source.exit_code !== undefined && source.exit_code !== null) return `exit ${source.exit_code}`;
  return "";
}

export function flash(message, kind = "info") {
  const box = document.getElementById("flash");
  clear(box);
  if (!message) return;
  box.append(
    h("div", { class: `flash flash-${kind}` },
      h("span", {}, message),
      h("button", { type: "button", class: "link", "aria-label": "Dismiss", onclick: () => clear(box) }, "×")),
  );
}

// A modal confirmation built on <dialog>. `fields` are extra inputs (a reason,
// a retention); resolves to their values, or null when cancelled.
export function confirmDialog({ title, body = [], confirm = "Confirm", danger = false, fields = [] }) {
  return new Promise((resolve) => {
    const inputs = {};
    const form = h("form", { method: "dialog" },
      h("h2", {}, title),
      ...[body].flat().map((p) => (p instanceof Node ? p : h("p", {}, p))),
      ...fields.map((f) => {
        const input = f.options
          ? h("select", { name: f.name, id: `dlg-${f.name}` },
              f.options.map(([value, label]) => h("option", { value, selected: value === f.value }, label)))
          : h("input", { name: f.name, id: `dlg-${f.name}`, value: f.value || "", placeholder: f.placeholder || "", autocomplete: "off" });
        inputs[f.name] = input;
        return h("p", {}, h("label", { for: `dlg-${f.name}` }, f.label), input);
      }),
      h("div", { class: "actions" },
        h("button", { value: "cancel", type: "submit", formnovalidate: true }, "Cancel"),
        h("button", { value: "ok", type: "submit", class: danger ? "danger" : "primary" }, confirm)),
    );
    const dialog = h("dialog", { class: "dialog", "aria-label": title }, form);
    dialog.addEventListener("close", () => {
      const ok = dialog.returnValue === "ok";
      dialog.remove();
      if (!ok) return resolve(null);
      const values = {};
      for (const [name, input] of Object.entries(inputs)) values[name] = input.value;
      resolve(values);
    });
    document.body.append(dialog);
    dialog.showModal();
    (Object.values(inputs)[0] || form.querySelector("button.primary, button.danger")).focus();
  });
}

// Accessible tabs: arrow keys move between them; a panel's show() runs when it opens.
export function tabs(panels, label) {
  const buttons = [];
  const list = h("div", { class: "tabs", role: "tablist", "aria-label": label });
  const select = (name, focus = false) => {
    for (const b of buttons) {
      const on = b.dataset.tab === name;
      b.setAttribute("aria-selected", on ? "true" : "false");
      b.tabIndex = on ? 0 : -1;
      if (on && focus) b.focus();
    }
    for (const [key, panel] of Object.entries(panels)) panel.el.hidden = key !== name;
    Promise.resolve(panels[name].show()).catch((err) => flash(err.message, "error"));
  };
  const names = Object.keys(panels);
  for (const name of names) {
    const b = h("button", {
      type: "button", role: "tab", id: `tab-${name}`, "aria-controls": `panel-${name}`,
      dataset: { tab: name }, onclick: () => select(name),
      onkeydown: (ev) => {
        const i = names.indexOf(name);
        if (ev.key === "ArrowRight") select(names[(i + 1) % names.length], true);
        if (ev.key === "ArrowLeft") select(names[(i - 1 + names.length) % names.length], true);
      },
    }, panels[name].label);
    buttons.push(b);
    list.append(b);
    panels[name].el.id = `panel-${name}`;
    panels[name].el.setAttribute("role", "tabpanel");
    panels[name].el.setAttribute("aria-labelledby", `tab-${name}`);
  }
  return { list, select };
}
