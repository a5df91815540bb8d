// The HTTP side of the page: every request goes through `api`, which adds the bearer token when the server wants
// one. The token is asked for once (on the first 401) and kept in localStorage; the event stream, downloads and
// <audio> elements carry it as `token=` because a browser cannot set headers on them.

const TOKEN_KEY = "tandem.token";
let token = localStorage.getItem(TOKEN_KEY) || "";
let asking = null;

// A link that carries the token (`/?token=…`, e.g. from a QR code) hands it over once; it leaves the address bar.
const given = new URLSearchParams(location.search).get("token");
if (given) {
  token = given;
  localStorage.setItem(TOKEN_KEY, token);
  history.replaceState(null, "", location.pathname + location.hash);
}

/** An answer that is not 2xx: `status` and the server's own words in `message`. */
export class APIError extends Error {
  constructor(status, message, route) {
    super(message);
    this.status = status;
    /** True when the server has no such route at all (a feature this server does not have yet). */
    this.missingRoute = route;
  }
}

/** `path` (from /api/…) with `token=` added when there is a token, for URLs the browser fetches itself. */
export function withToken(path) {
  if (!token) return path;
  return path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token);
}

/** The event stream's ws:// or wss:// URL. */
export function socketURL(query) {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return withToken(`${scheme}//${location.host}/api/events?${query}`);
}

export const hasToken = () => token !== "";

/**
 * Calls the API. `body` (an object) goes as JSON. Resolves to the parsed JSON answer; rejects with an APIError
 * carrying the server's message, or a TypeError when the network fails.
 */
export async function api(method, path, body) {
  for (let attempt = 0; attempt < 3; attempt++) {
    const headers = {};
    if (token) headers.Authorization = "Bearer " + token;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch("/api/" + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
    if (response.status === 401) {
      await askForToken(attempt > 0);
      continue;
    }
    const text = await response.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = text;
    }
    if (!response.ok) {
      const message = (data && data.error) || (typeof data === "string" && data) || response.statusText;
      const missing = response.status === 404 && /^no [A-Z]+ \/api\//.test(message);
      throw new APIError(response.status, message, missing);
    }
    return data;
  }
  throw new APIError(401, "the token was refused", false);
}

export const get = (path) => api("GET", path);
export const post = (path, body) => api("POST", path, body);
export const put = (path, body) => api("PUT", path, body);
export const del = (path) => api("DELETE", path);

/** Percent-encodes each name of a route (`engines/${name(e)}/plugins/${name(p)}`). */
export const name = (s) => encodeURIComponent(s);

/** Shows the token dialog (one at a time) and resolves when a token was given. */
function askForToken(refused) {
  if (!asking) {
    asking = new Promise((resolve) => {
      const dialog = document.getElementById("token-dialog");
      const input = dialog.querySelector("input[type=password]");
      dialog.querySelector(".why").textContent = refused || token
        ? "That token was refused. Give the one `tandem http-token` prints on the server."
        : "This Tandem needs its access token (`tandem http-token` prints it on the server).";
      input.value = "";
      dialog.showModal();
      dialog.addEventListener("close", function done() {
        dialog.removeEventListener("close", done);
        token = input.value.trim();
        localStorage.setItem(TOKEN_KEY, token);
        asking = null;
        resolve();
      });
    });
  }
  return asking;
}
