// Finding a control among a dozen plugins of thirty controls on a phone: a bar that stays under the header with
// what the tab shows (every rack, one rack or one plugin: the list says where you are, and the plugin in view when
// more than one is shown), the plugin before and after, and a filter of controls by their names (and their
// plugin's). Each plugin folds: in a session of many controls only the first plugin is open at first, the others
// folded (a short session shows everything); then as this browser last left them.
// Any control is three actions from the tab bar: the tab, its plugin in the list, its name in the filter (or one
// swipe: a plugin shown alone is one screen of controls).

import { h, fill, text } from "./dom.js";

const OPEN_KEY = "tandem.racks.open";
const SCOPE_KEY = "tandem.racks.scope";

/** engine/plugin → true (open) or false (folded), as the user last left it; absent: the default. */
const opened = read(OPEN_KEY, {});
/** "" (every rack), "r:ENGINE" or "p:ENGINE/PLUGIN". */
let scope = read(SCOPE_KEY, "");
/** The plugins as drawn, in order: {key, engine, name, index, item, body, toggle, hay}. */
let plugins = [];
/** engine → its card. */
const cards = new Map();
/** Plugins folded by hand while a filter shows them (forgotten when the filter changes). */
const foldedWhileFiltering = new Set();

let bar, select, filter, count, prev, next, list, inView = null, spyQueued = false, visible = false;

function read(key, fallback) {
  try {
    const v = JSON.parse(localStorage.getItem(key));
    return v === null || typeof v !== typeof fallback ? fallback : v;
  } catch {
    return fallback;
  }
}

function keep(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch {
    // A browser that keeps nothing (private mode, full storage) forgets the folds at a reload: no harm.
  }
}

/** The bar; `engines` is the element holding the racks' cards. */
export function navBar(engines) {
  list = engines;
  select = h("select", { id: "racks-show", "aria-label": "Show", onchange: () => show(select.value) });
  prev = h("button", { type: "button", class: "step", "aria-label": "Previous plugin", onclick: () => step(-1) }, "‹");
  next = h("button", { type: "button", class: "step", "aria-label": "Next plugin", onclick: () => step(1) }, "›");
  filter = h("input", { type: "search", id: "controls-filter", placeholder: "Filter controls, e.g. gain 1", autocomplete: "off",
    spellcheck: false, "aria-label": "Filter controls by name", oninput: () => {
      foldedWhileFiltering.clear();
      apply();
      window.scrollTo({ top: 0 });
    } });
  count = h("output", { id: "filter-count", for: "controls-filter", "aria-live": "polite" });
  bar = h("div", { class: "racks-bar", role: "group", "aria-label": "Find a plugin or a control" },
    h("div", { class: "row" }, prev, select, next),
    h("div", { class: "row" }, filter, count));
  window.addEventListener("scroll", spySoon, { passive: true });
  window.addEventListener("resize", spySoon, { passive: true });
  return bar;
}

/** Whether the Racks tab is in view (the where-you-are line follows the scroll only then). */
export function shownNav(on) {
  visible = on;
  if (on) spySoon();
}

/** Forgets the plugins drawn before (the chains are drawn anew). */
export function begin() {
  plugins = [];
  cards.clear();
}

export function addCard(engine, element) {
  cards.set(engine, element);
}

/** A plugin as drawn: its item, its foldable body and the button that folds it. */
export function addPlugin(p) {
  const entry = { ...p, key: `${p.engine}/${p.name}`, hay: `${p.engine} ${p.name} ${p.label || ""}`.toLowerCase() };
  plugins.push(entry);
  entry.toggle.addEventListener("click", () => {
    const open = entry.toggle.getAttribute("aria-expanded") !== "true";
    if (filterWords().length) {
      if (open) foldedWhileFiltering.delete(entry.key);
      else foldedWhileFiltering.add(entry.key);
    } else {
      opened[entry.key] = open;
      keep(OPEN_KEY, opened);
    }
    apply();
  });
}

/** Up to this many controls in the whole session, every plugin is open at first. */
const FEW_CONTROLS = 60;
let fewControls = true;

/** Whether a plugin is open when nothing else decides: as left, else all of a short session, else only the first. */
function isOpen(entry) {
  return opened[entry.key] ?? (fewControls || entry === plugins[0]);
}

const title = (engine) => (engine === "recorder" ? "Recorder chain" : engine === "player" ? "Player chain" : `Rack ${engine}`);
const where = (p) => `${p.engine} › ${p.index + 1}. ${p.name}`;

/** The list of what to show, after the chains were drawn; then the view as it was. */
export function finish() {
  const engines = [...cards.keys()];
  const total = plugins.length;
  fewControls = plugins.reduce((n, p) => n + p.body.querySelectorAll(".control[data-key]").length, 0) <= FEW_CONTROLS;
  const groups = engines.map((e) => {
    const own = plugins.filter((p) => p.engine === e);
    return h("optgroup", { label: title(e) },
      h("option", { value: `r:${e}`, dataset: { label: `${title(e)}: all ${own.length} plugin(s)`, short: title(e) } }),
      own.map((p) => h("option", { value: `p:${p.key}`, dataset: { label: where(p) } })));
  });
  fill(select, h("option", { value: "", dataset: { label: `All ${total} plugins`, short: "All" } }), groups);
  for (const o of select.options) o.textContent = o.dataset.label;
  const known = [...select.options].some((o) => o.value === scope);
  if (!known) scope = "";
  select.value = scope;
  apply();
}

/** Shows what the list names: every rack, one rack or one plugin (opened), from the top. */
export function show(value) {
  scope = value;
  keep(SCOPE_KEY, scope);
  select.value = scope;
  if (scope.startsWith("p:") && opened[scope.slice(2)] === false) {
    // Chosen to be seen: open, and left open.
    opened[scope.slice(2)] = true;
    keep(OPEN_KEY, opened);
  }
  apply();
  window.scrollTo({ top: 0 });
}

/** The plugin before or after: shown alone when one is; else scrolled to (and opened) among the others. */
function step(by) {
  const shown = plugins.filter((p) => !p.item.hidden);
  if (scope.startsWith("p:")) {
    const i = plugins.findIndex((p) => p.key === scope.slice(2));
    const to = plugins[Math.min(plugins.length - 1, Math.max(0, i + by))];
    if (to) show(`p:${to.key}`);
    return;
  }
  if (!shown.length) return;
  const i = inView ? shown.indexOf(inView) : -1;
  const to = shown[Math.min(shown.length - 1, Math.max(0, i + by))];
  if (!isOpen(to) && !filterWords().length) {
    opened[to.key] = true;
    keep(OPEN_KEY, opened);
    apply();
  }
  to.item.scrollIntoView({ block: "start" });
  inView = to;
  spy();
}

const filterWords = () => (filter?.value || "").trim().toLowerCase().split(/\s+/).filter(Boolean);

/** Shows and folds every plugin and control as the scope, the filter and the folds say. */
export function apply() {
  if (!list) return;
  const words = filterWords();
  let matched = 0;
  const engineShown = new Map();
  for (const p of plugins) {
    const inScope = scope === "" || scope === `r:${p.engine}` || scope === `p:${p.key}`;
    let matches = 0;
    for (const c of p.body.querySelectorAll(".control[data-key]")) {
      const hit = !words.length || words.every((w) => c.dataset.name.includes(w) || p.hay.includes(w));
      c.hidden = !hit;
      if (hit && inScope) matches++;
    }
    const shown = inScope && (!words.length || matches > 0);
    p.item.hidden = !shown;
    if (shown) engineShown.set(p.engine, (engineShown.get(p.engine) || 0) + 1);
    if (words.length && shown) matched += matches;
    const open = words.length ? !foldedWhileFiltering.has(p.key) : scope === `p:${p.key}` || isOpen(p);
    p.body.hidden = !open;
    p.toggle.setAttribute("aria-expanded", String(open));
  }
  for (const [engine, card] of cards) {
    const inScope = scope === "" || scope === `r:${engine}` || scope.startsWith(`p:${engine}/`);
    card.hidden = !inScope || (words.length > 0 && !engineShown.get(engine));
  }
  // One plugin, or a filter: the chain's own settings and the add button give way to the controls sought.
  list.dataset.focus = words.length ? "filter" : scope.startsWith("p:") ? "plugin" : "";
  text(count, words.length ? `${matched} match${matched === 1 ? "" : "es"}` : "");
  const i = plugins.findIndex((p) => p.key === scope.slice(2));
  prev.disabled = scope.startsWith("p:") && i <= 0;
  next.disabled = scope.startsWith("p:") && i >= plugins.length - 1;
  spySoon();
}

function spySoon() {
  if (spyQueued || !visible) return;
  spyQueued = true;
  requestAnimationFrame(() => {
    spyQueued = false;
    spy();
  });
}

/** The list's chosen line says, beside what is shown, which plugin is in view under the bar. */
function spy() {
  if (!select || !visible) return;
  const below = bar.getBoundingClientRect().bottom + 8;
  const shown = plugins.filter((p) => !p.item.hidden);
  const found = shown.find((p) => p.item.getBoundingClientRect().bottom > below) || null;
  if (!scope.startsWith("p:")) inView = found;
  for (const o of select.options) {
    // While it says where, the count gives way (a phone's list is 25 letters wide).
    const at = o.selected && !scope.startsWith("p:") && inView;
    text(o, at ? `${o.dataset.short} · at ${scope ? `${inView.index + 1}. ${inView.name}` : where(inView)}` : o.dataset.label);
  }
  bar.dataset.at = inView && !scope.startsWith("p:") ? inView.key : scope.slice(2);
}
