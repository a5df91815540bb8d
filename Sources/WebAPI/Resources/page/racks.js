// Racks: every engine's plugin chain with every control, bypass, LV2 presets, each plugin's load, the chain's
// dry/wet and gain; plugins added from the installed-plugin browser, removed and moved (where the server can).
// Finding one control among hundreds (the bar under the header, folds, the filter) is racknav.js's.

import { get, post, put, del, name } from "./api.js";
import { h, card, fill, text, number, debounce, latest } from "./dom.js";
import { store, on, emit, refresh } from "./live.js";
import { controlWidget } from "./controls.js";
import { pinButton } from "./favourites.js";
import { navBar, shownNav, begin, addCard, addPlugin, finish } from "./racknav.js";

let list, browser, timer;
let signature = "";
let lastStatus = null;
/** Whether the server can add, remove and move plugins: offered until the server answers that it has no such route
 * (an older server; see `failed`). */
let chainEdit = true;

export function mount(root) {
  list = h("div", { class: "engines" });
  browser = pluginBrowser();
  root.append(navBar(list), list, browser.element);
  on("plugins", render);
  on("chain-level", (l) => showChainLevel(l.engine, l));
  on("bypass", (b) => {
    const p = (store.plugins || []).find((x) => x.engine === b.engine && x.name === b.plugin);
    if (p) updatePlugin(p);
  });
  on("status", (s) => {
    if (!store.plugins) return;
    if (engineNames(s).join() !== engineNames(lastStatus).join()) render(store.plugins);
    lastStatus = s;
    showLive(s);
  });
}

export function shown(on) {
  clearInterval(timer);
  shownNav(on);
  // Per-plugin load changes all the time and comes with the plugin list (isolated racks' too): read it every 2 s
  // while seen, not while the plugin browser is open (its search is what the page waits for then).
  if (on) {
    refresh("plugins");
    timer = setInterval(() => document.visibilityState === "visible" && !browser.element.open && refresh("plugins"), 2000);
  }
}

/** Engines that can have a chain: those with plugins, and the recorder, player and racks the session has. */
function engineNames(s) {
  const used = new Set((store.plugins || []).map((p) => p.engine));
  const names = new Set(used);
  if (s?.recorder) names.add("recorder");
  if (s?.player) names.add("player");
  for (const r of s?.racks || []) names.add(r.name);
  // Chains with plugins first; then the recorder, the player, the racks.
  const order = (e) => (used.has(e) ? 0 : 3) + (e === "recorder" ? 0 : e === "player" ? 1 : 2);
  return [...names].sort((a, b) => order(a) - order(b) || a.localeCompare(b));
}

function noChainEdit() {
  if (chainEdit === false) return;
  chainEdit = false;
  render(store.plugins, true);
}

function render(plugins, force = false) {
  if (!plugins) {
    if (store.missing.has("plugins")) fill(list, h("p", {}, "This server does not list plugins."));
    return;
  }
  const engines = engineNames(store.status);
  const sig = JSON.stringify([engines, chainEdit, plugins.map((p) => [p.engine, p.name, p.uri,
    p.controls.map((c) => c.symbol), p.presets.map((x) => x.uri)])]);
  if (sig === signature && !force) {
    for (const p of plugins) updatePlugin(p);
    return;
  }
  signature = sig;
  if (!engines.length) {
    fill(list, h("p", { class: "hint" }, "This session has no recorder, player or rack: nothing runs plugins."));
    return;
  }
  cards.clear();
  pluginParts.clear();
  chainSliders.clear();
  begin();
  fill(list, engines.map((e) => engineCard(e, plugins.filter((p) => p.engine === e))));
  finish();
  for (const p of plugins) updatePlugin(p);
  if (lastStatus) showLive(lastStatus);
}

const cards = new Map();

function engineCard(engine, plugins) {
  const title = engine === "recorder" ? "Recorder chain" : engine === "player" ? "Player chain" : `Rack ${engine}`;
  const info = h("p", { class: "hint engine-info" });
  const mix = chainSlider(engine, "mix", "Dry/wet", 0, 1, 0.01, (v) => `${Math.round(v * 100)} % wet`);
  const gain = chainSlider(engine, "gain", "Gain", -60, 24, 0.5, (v) => `${v <= -120 ? "-inf" : number(v)} dB`);
  const items = plugins.map((p, i) => pluginCard(p, i, plugins.length));
  const c = card(title, info,
    plugins.length ? h("div", { class: "chain-settings" }, mix, gain,
      store.status?.plugins && !store.status.plugins[engine]
        ? h("p", { class: "hint" }, "The server does not report this chain's mix and gain: the sliders show only what this page set.")
        : null) : null,
    h("ol", { class: "plugins", "aria-label": `${title}: plugins in signal order` }, items),
    plugins.length ? null : h("p", { class: "hint" }, "No plugins in this chain."),
    chainEdit ? h("button", { class: "add", onclick: () => browser.open(engine, plugins.length) }, `+ Add a plugin to ${engine}`) : null);
  c.dataset.engine = engine;
  cards.set(engine, { info });
  addCard(engine, c);
  return c;
}

/** The chain's mix and gain sliders, by engine: each shows the server's value (the status, then every
 * `chain-level-changed` event, whoever made the change) unless it is being dragged here. */
const chainSliders = new Map();

function chainSlider(engine, what, label, min, max, step, show) {
  const id = `chain-${what}-${engine}`;
  const out = h("output", { for: id, class: "chain-value", "aria-live": "off" }, "–");
  let touchedAt = 0;
  const send = latest((v) => put(`engines/${name(engine)}/${what}`, what === "mix" ? { mix: v } : { gain: v })
    .catch((e) => {
      emit("problem", e.message);
      touchedAt = 0;
      refresh("status");
    }));
  const input = h("input", { type: "range", id, min, max, step, value: what === "mix" ? 1 : 0,
    "aria-label": `${engine} chain ${label}`,
    oninput: () => {
      touchedAt = Date.now();
      const v = Number(input.value);
      text(out, show(v));
      input.setAttribute("aria-valuetext", show(v));
      send(v);
    },
    onpointerdown: () => (touchedAt = Infinity),
    onpointerup: () => (touchedAt = Date.now()),
    onpointercancel: () => (touchedAt = Date.now()) });
  const element = h("div", { class: "control chain-level", dataset: { engine, level: what } },
    h("label", { for: id }, label), input, out);
  const self = {
    element,
    show(value) {
      if (!Number.isFinite(value)) return;
      element.dataset.value = String(value);
      text(out, show(value));
      input.setAttribute("aria-valuetext", show(value));
      // A value being set here wins until it has been answered.
      if (Date.now() - touchedAt > 800) input.value = String(Math.min(max, Math.max(min, value)));
    },
  };
  if (!chainSliders.has(engine)) chainSliders.set(engine, {});
  chainSliders.get(engine)[what] = self;
  const chain = store.status?.plugins?.[engine];
  if (chain) self.show(what === "mix" ? chain.mix : chain.gainDB);
  return element;
}

/** A chain's mix and gain as the server has them now. */
function showChainLevel(engine, level) {
  const sliders = chainSliders.get(engine);
  if (!sliders || !level) return;
  sliders.mix?.element.isConnected && sliders.mix.show(level.mix);
  sliders.gain?.element.isConnected && sliders.gain.show(level.gainDB);
}

const pluginParts = new Map();

function pluginCard(p, index, count) {
  const key = `${p.engine}/${p.name}`;
  const bypass = h("input", { type: "checkbox", role: "switch", class: "switch", id: `bypass-${key}`, "aria-label": `Bypass ${p.name}`,
    onchange: () => put(`engines/${name(p.engine)}/plugins/${name(p.name)}/bypass`, { bypassed: bypass.checked })
      .then(() => refresh("plugins")).catch((e) => emit("problem", e.message)) });
  const load = h("span", { class: "load" }, "–");
  const outputs = h("dl", { class: "outputs" });
  let presets = null;
  if (p.presets.length) {
    const select = h("select", { id: `preset-${key}`, "aria-label": `${p.name}: LV2 preset` },
      h("option", { value: "" }, "Choose a preset…"), p.presets.map((x) => h("option", { value: x.uri }, x.label)));
    presets = h("div", { class: "row" }, h("label", { for: `preset-${key}` }, "Preset"), select,
      h("button", { "aria-label": `Load the chosen preset on ${p.name}`, onclick: () => select.value && post(`engines/${name(p.engine)}/plugins/${name(p.name)}/preset`, { preset: select.value })
        .then(() => refresh("plugins")).catch((e) => emit("problem", e.message)) }, "Load"));
  }
  const edit = chainEdit ? h("div", { class: "row tools" },
    h("button", { "aria-label": `Move ${p.name} earlier`, disabled: index === 0, onclick: () => move(p, index - 1) }, "↑"),
    h("button", { "aria-label": `Move ${p.name} later`, disabled: index === count - 1, onclick: () => move(p, index + 1) }, "↓"),
    h("button", { class: "danger", "aria-label": `Remove ${p.name}`, onclick: (e) => remove(p, e.currentTarget) }, "Remove")) : null;
  const body = h("div", { class: "plugin-body", id: `plugin-body-${key}` },
    h("p", { class: "hint" }, h("span", { class: "uri" }, p.uri), " · ", load),
    presets,
    h("div", { class: "controls" }, p.controls.length
      ? p.controls.map((c) => controlWidget(p.engine, p.name, c.symbol, { onPin: pinButton }))
      : h("p", { class: "hint" }, "No controls.")),
    outputs,
    edit);
  // The name folds and unfolds the plugin; folded, it says how many controls it keeps.
  const toggle = h("button", { type: "button", class: "fold", "aria-expanded": "true", "aria-controls": body.id },
    h("span", { class: "chevron", "aria-hidden": "true" }),
    h("span", { class: "name" }, p.name), h("small", {}, ` ${p.label}`),
    h("small", { class: "count" }, ` · ${p.controls.length} control${p.controls.length === 1 ? "" : "s"}`));
  const item = h("li", { class: "plugin", dataset: { engine: p.engine, plugin: p.name } },
    h("div", { class: "plugin-head" },
      h("h3", {}, toggle),
      h("label", { class: "check", for: `bypass-${key}` }, bypass, " Bypass")),
    body);
  pluginParts.set(key, { bypass, load, outputs, item });
  addPlugin({ engine: p.engine, name: p.name, label: p.label, index, item, body, toggle });
  return item;
}

function updatePlugin(p) {
  const parts = pluginParts.get(`${p.engine}/${p.name}`);
  if (!parts) return;
  parts.bypass.checked = !!p.bypassed;
  parts.item.classList.toggle("bypassed", !!p.bypassed);
  const t = p.timing;
  const share = t && (Number.isFinite(t.meanShare) ? t.meanShare : periodShare(t.meanMicros));
  if (t && Number.isFinite(share)) {
    text(parts.load, `load ${(100 * share).toFixed(2)} % of a period (mean ${number(t.meanMicros)} µs, max ${number(t.maxMicros)} µs)`
      + (t.overBudget ? `, over ${Math.round((t.budgetShare || 0.25) * 100)} % in ${t.overBudget} cycle(s)` : "")
      + (p.latencyFrames ? ` · latency ${p.latencyFrames} frames` : ""));
    parts.load.classList.toggle("bad", t.overBudget > 0);
    parts.load.dataset.share = String(share);
  } else {
    text(parts.load, p.latencyFrames ? `latency ${p.latencyFrames} frames` : "load not reported");
  }
}

/** A mean in µs as a share of the period, for a server whose timing has no meanShare. */
function periodShare(micros) {
  const s = store.status;
  return s?.sampleRate && Number.isFinite(micros) ? micros / ((1e6 * s.period) / s.sampleRate) : NaN;
}

/** What only the status has: each rack's state and cost, each plugin's output ports. */
function showLive(s) {
  const racks = new Map((s.racks || []).map((r) => [r.name, r]));
  const periodMicros = s.sampleRate ? (1e6 * s.period) / s.sampleRate : 0;
  for (const [engine, { info }] of cards) {
    const r = racks.get(engine) || (engine === "recorder" ? s.recorder : engine === "player" ? s.player : null);
    if (!r) continue;
    const parts = [];
    if (r.client) parts.push(`client ${r.client}`);
    if (r.running !== undefined) parts.push(r.running ? "running" : "down");
    if (r.isolated) parts.push(`isolated (pid ${r.pid ?? "–"}, ${r.restarts ?? 0} restart(s))`);
    if (r.cycle && periodMicros) parts.push(`cycle p99 ${((100 * r.cycle.p99Micros) / periodMicros).toFixed(1)} % of a period`);
    if (r.xruns !== undefined) parts.push(`xruns ${r.xruns}`);
    text(info, parts.join(" · "));
  }
  for (const [engine, chain] of Object.entries(s.plugins || {})) {
    showChainLevel(engine, chain);
    for (const p of chain.plugins || []) {
      const parts = pluginParts.get(`${engine}/${p.name}`);
      if (!parts) continue;
      if (!p.outputs?.length) {
        parts.outputs.hidden = true;
        continue;
      }
      parts.outputs.hidden = false;
      const rows = p.outputs.flatMap((o) => [h("dt", {}, o.symbol), h("dd", {}, number(o.value))]);
      parts.outputs.replaceChildren(...rows);
    }
  }
}

/** A refusal in the toast; a route the server does not have takes the chain editing off the page. */
function failed(e) {
  if (e.missingRoute) {
    noChainEdit();
    emit("problem", "This server cannot change chains from the page.");
  } else {
    emit("problem", e.message);
  }
}

async function move(p, to) {
  try {
    await post(`engines/${name(p.engine)}/plugins/${name(p.name)}/move`, { to });
  } catch (e) {
    failed(e);
  }
  refresh("plugins");
}

async function remove(p, button) {
  // Two presses: a stage is no place for a remove by accident.
  if (button.dataset.armed !== "1") {
    button.dataset.armed = "1";
    button.textContent = "Press again to remove";
    setTimeout(() => {
      button.dataset.armed = "";
      button.textContent = "Remove";
    }, 3000);
    return;
  }
  try {
    await del(`engines/${name(p.engine)}/plugins/${name(p.name)}`);
  } catch (e) {
    failed(e);
  }
  refresh("plugins");
}

// ---- The installed-plugin browser.

function pluginBrowser() {
  let engine = null;
  const search = h("input", { type: "search", id: "browse-search", placeholder: "name, URI or class (e.g. reverb)", autocomplete: "off" });
  const position = h("select", { id: "browse-at", "aria-label": "Where in the chain" });
  const results = h("ul", { class: "browse-results", "aria-live": "polite" });
  const heading = h("h2", { id: "browse-title" }, "Add a plugin");
  const dialog = h("dialog", { class: "browser", "aria-labelledby": "browse-title" },
    h("form", { method: "dialog", class: "stack" },
      heading,
      h("label", { for: "browse-search" }, "Search installed plugins"), search,
      h("label", { for: "browse-at" }, "Position"), position,
      results,
      h("div", { class: "row" }, h("button", { value: "close" }, "Close"))));
  const find = debounce(async () => {
    const q = search.value.trim();
    if (q.length < 2) {
      fill(results, h("li", { class: "hint" }, "Type two letters or more."));
      return;
    }
    try {
      const found = await get(`installed-plugins?filter=${encodeURIComponent(q)}`);
      fill(results, found.length ? found.slice(0, 60).map(row) : h("li", { class: "hint" }, "Nothing installed matches."));
      if (found.length > 60) results.append(h("li", { class: "hint" }, `${found.length - 60} more: narrow the search.`));
    } catch (e) {
      fill(results, h("li", { class: "bad" }, e.message));
    }
  }, 250);
  search.addEventListener("input", find);
  const row = (p) => {
    const ports = p.ports || [];
    const audio = (input) => ports.filter((x) => x.kind === "audio" && x.isInput === input).length;
    return h("li", {},
      h("div", {}, h("strong", {}, p.name),
        h("small", {}, ` ${(p.format || "lv2").toUpperCase()}${p.className ? " " + p.className : ""} · ${audio(true)} in / ${audio(false)} out`),
        h("div", { class: "uri" }, p.uri), p.missingFeatures?.length ? h("div", { class: "bad" }, "needs " + p.missingFeatures.join(", ")) : null),
      h("button", { type: "button", "aria-label": `Add ${p.name}`, onclick: () => add(p) }, "Add"));
  };
  async function add(p) {
    const at = position.value === "" ? undefined : Number(position.value);
    try {
      const r = await post(`engines/${name(engine)}/plugins`, at === undefined ? { uri: p.uri } : { uri: p.uri, at });
      emit("problem", r?.detail ? `Added: ${r.detail}` : `Added ${p.name}`);
      dialog.close();
    } catch (e) {
      if (e.missingRoute) dialog.close();
      failed(e);
    }
    refresh("plugins");
  }
  return {
    element: dialog,
    open(e, count) {
      engine = e;
      text(heading, `Add a plugin to ${e}`);
      fill(position, h("option", { value: "" }, "at the end"),
        Array.from({ length: count }, (_, i) => h("option", { value: String(i) }, `before plugin ${i + 1}`)));
      dialog.showModal();
      search.focus();
      find();
    },
  };
}
