// The page's start: tabs (kept in the URL's #), the header's link state, the banner for a lost server, the toast
// for refusals, and each tab's module.

import { store, on, start, refreshAll, showMeters } from "./live.js";
import { text } from "./dom.js";
import * as overview from "./overview.js";
import * as racks from "./racks.js";
import * as graph from "./graph.js";
import * as takes from "./takes.js";
import * as presets from "./presets.js";
import * as favourites from "./favourites.js";

const tabs = { overview, racks, graph, takes, presets, favourites };
const buttons = [...document.querySelectorAll('[role="tab"]')];

/** The tab in view; each module is told with `shown(true|false)`. */
export let current = null;

function select(name, focus = false) {
  if (!tabs[name]) name = "overview";
  if (current === name) return;
  for (const b of buttons) {
    const on = b.dataset.tab === name;
    b.setAttribute("aria-selected", String(on));
    b.tabIndex = on ? 0 : -1;
    document.getElementById("panel-" + b.dataset.tab).hidden = !on;
    if (on && focus) b.focus();
  }
  if (current) tabs[current].shown?.(false);
  if (current) hideToast();
  current = name;
  tabs[name].shown?.(true);
  showMeters(name === "overview");
  if (location.hash !== "#" + name) history.replaceState(null, "", "#" + name);
}

for (const b of buttons) {
  b.addEventListener("click", () => select(b.dataset.tab));
  b.addEventListener("keydown", (e) => {
    const i = buttons.indexOf(b);
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: buttons.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    select(buttons[(to + buttons.length) % buttons.length].dataset.tab, true);
  });
}
window.addEventListener("hashchange", () => select(location.hash.slice(1)));

// ---- The header: the session's name and how the page is linked to it.

const link = document.getElementById("link");
const banner = document.getElementById("banner");

function showLink() {
  const s = store.status;
  let state, label;
  if (store.stream !== "live") {
    state = "down";
    label = navigator.onLine === false ? "offline: reconnecting" : "reconnecting…";
  } else if (s?.serverLost) {
    state = "lost";
    label = "JACK server lost";
  } else {
    state = "live";
    label = "live";
  }
  text(link, label);
  link.dataset.state = state;
  let message = "";
  if (state === "lost") {
    message = `The JACK server '${s.server}' is gone. Tandem keeps the session and brings it back when the server returns.`;
  } else if (state === "down" && store.status) {
    message = "The page lost its link to Tandem; it reconnects by itself and catches up. What it shows may be old.";
  }
  banner.hidden = !message;
  text(banner, message);
  document.body.dataset.link = state;
}

on("stream", showLink);
on("status", (s) => {
  showLink();
  if (s) {
    text(document.getElementById("session-name"), s.session ? `Tandem · ${s.session}` : "Tandem");
    document.title = s.session ? `${s.session} · Tandem` : "Tandem";
  }
});
window.addEventListener("offline", showLink);

// ---- Refusals and failures of what the page asked, in words, for a few seconds: above the tab bar (never over
// it), a few seconds long (longer for longer words), and gone at a tab change, whose controls it would cover.

const toast = document.getElementById("toast");
let toastTimer = null;
function hideToast() {
  clearTimeout(toastTimer);
  toast.classList.remove("show");
  text(toast, "");
}
on("problem", (message) => {
  text(toast, message);
  toast.classList.add("show");
  clearTimeout(toastTimer);
  toastTimer = setTimeout(hideToast, Math.min(6000, 2500 + 30 * String(message).length));
});

for (const [name, module] of Object.entries(tabs)) module.mount(document.getElementById("panel-" + name));
select(location.hash.slice(1) || "overview");
start();
refreshAll();
