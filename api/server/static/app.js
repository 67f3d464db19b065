// Entry point: take a token handed over in the URL fragment, check who we are,
// draw the navigation and hand the page to the module its path names.

import { api, clearToken, getToken, setToken } from "./api.js";
import { clear, fill, flash, h, visible } from "./dom.js";

function takeTokenFromFragment() {
  // `overspill serve` prints http://host/#token=...; fragments never reach the
  // server, and we drop the token from the address bar (and history) at once,
  // keeping any other part of the fragment (#cleanup#token=... or #x&token=...).
  const m = location.hash.match(/[#&]token=([^&#]+)/);
  if (!m) return;
  setToken(decodeURIComponent(m[1]), false);
  const rest = location.hash.replace(m[0], "").replace(/^#?&?/, "");
  history.replaceState(null, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
}

function nav(me) {
  const here = location.pathname;
  const link = (href, label, active) =>
    h("a", { href, "aria-current": active ? "page" : null }, label);
  return [
    link("/", "Artifacts", here === "/" || here.startsWith("/artifacts/")),
    me.role === "admin" ? link("/admin", "Admin", here === "/admin") : null,
    h("span", { class: "who", title: `role: ${me.role}` }, `${me.name} (${me.role})`),
    h("button", {
      type: "button",
      class: "link",
      onclick: () => {
        clearToken();
        location.assign("/sign-in");
      },
    }, "Sign out"),
  ];
}

function signIn(main) {
  const params = new URLSearchParams(location.search);
  const next = params.get("next");
  // Only a path on this origin: "//evil" and "/\evil" would leave the site.
  const target = next ? new URL(next, location.origin) : null;
  const safeNext = target && target.origin === location.origin && next.startsWith("/")
    ? target.pathname + target.search + target.hash : "/";
  const input = h("input", { id: "token", name: "token", type: "password", autocomplete: "off", required: true, placeholder: "ovs_…" });
  const remember = h("input", { id: "remember", type: "checkbox" });
  const error = h("p", { class: "error", role: "alert" });
  const form = h("form", {
    class: "card narrow",
    onsubmit: async (ev) => {
      ev.preventDefault();
      clear(error);
      const token = input.value.trim();
      try {
        await api("GET", "/v1/whoami", { token });
      } catch (err) {
        error.textContent = err.status === 401 ? "That token is not valid (unknown, expired or revoked)." : err.message;
        return;
      }
      setToken(token, remember.checked);
      location.assign(safeNext);
    },
  },
  h("h1", {}, "Sign in"),
  params.get("expired") ? h("p", { class: "muted" }, "Your token is no longer valid; sign in again.") : null,
  h("p", {}, "Paste an API token. ", h("code", {}, "overspill serve"), " prints a link that signs you in; ",
    h("code", {}, "overspill token create --principal user:NAME --role user"), " makes a new token."),
  h("p", {}, h("label", { for: "token" }, "Token"), input),
  h("p", { class: "check" }, remember, h("label", { for: "remember" }, "Stay signed in on this browser")),
  error,
  h("p", {}, h("button", { type: "submit", class: "primary" }, "Sign in")));
  fill(main, form);
  input.focus();
}

async function start() {
  takeTokenFromFragment();
  const main = document.getElementById("main");
  const navEl = document.getElementById("nav");
  if (location.pathname === "/sign-in") {
    document.title = "Sign in · overspill";
    signIn(main);
    return;
  }
  if (!getToken()) {
    location.replace(`/sign-in?next=${encodeURIComponent(location.pathname + location.search)}`);
    return;
  }
  let me;
  try {
    me = await api("GET", "/v1/whoami");
  } catch (err) {
    fill(main, h("p", { class: "error" }, err.message));
    return;
  }
  fill(navEl, ...nav(me).filter(Boolean));
  try {
    const path = location.pathname;
    const match = path.match(/^\/artifacts\/([^/]+)$/);
    const session = path.match(/^\/sessions\/([^/]+)$/);
    if (match) {
      const { render } = await import("./artifact.js");
      await render(main, me, decodeURIComponent(match[1]));
    } else if (session) {
      const { render } = await import("./session.js");
      await render(main, me, decodeURIComponent(session[1]));
    } else if (path === "/admin") {
      const { render } = await import("./admin.js");
      await render(main, me);
    } else if (path !== "/") {
      fill(main, h("h1", {}, "No such page"),
        h("p", {}, "Nothing lives at ", h("code", {}, visible(path)), ". ",
          h("a", { href: "/" }, "See the artifacts"), "."));
    } else {
      const { render } = await import("./list.js");
      await render(main, me);
    }
  } catch (err) {
    flash(err.message, "error");
  }
}

start();
