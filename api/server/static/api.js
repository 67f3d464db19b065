// The HTTP API as the UI uses it. The token travels only in the Authorization
// header; it is kept in sessionStorage (this tab) or, when the user asks to stay
// signed in, localStorage. No cookie is ever set, so other sites cannot borrow it.

const KEY = "overspill.token";

export function getToken() {
  return sessionStorage.getItem(KEY) || localStorage.getItem(KEY);
}

export function setToken(token, remember) {
  clearToken();
  (remember ? localStorage : sessionStorage).setItem(KEY, token);
}

export function clearToken() {
  sessionStorage.removeItem(KEY);
  localStorage.removeItem(KEY);
}

export class ApiError extends Error {
  constructor(status, code, message, body) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

function query(params) {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "" && value !== false) q.set(key, String(value));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

export async function api(method, path, { params = {}, body, token = getToken(), signal } = {}) {
  // "ui": what these pages read is a person's look, not a model's read-back
  // (the server's context ledger counts the two apart).
  const headers = { Accept: "application/json", "X-Overspill-Tool": "ui" };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path + query(params), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit",
      cache: "no-store",
      signal,
    });
  } catch (err) {
    if (err.name === "AbortError") throw err;  // the person cancelled it
    throw new ApiError(0, "network", `cannot reach the server: ${err.message}`);
  }
  if (response.status === 204) return null;
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const e = (data && data.error) || {};
    const message = e.message || `${response.status} ${response.statusText}`;
    if (response.status === 401 && token && location.pathname !== "/sign-in") {
      clearToken();
      location.assign(`/sign-in?next=${encodeURIComponent(location.pathname + location.search)}&expired=1`);
    }
    throw new ApiError(response.status, e.code || "http_error", message, data);
  }
  return data;
}

export const get = (path, params) => api("GET", path, { params });
