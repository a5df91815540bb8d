// A plugin control as a widget: a slider (linear or logarithmic), a switch, or a list of named values, with its
// value in its unit as an editable text. The same control may be on several tabs (a rack and the favourites);
// every widget of it is kept in `widgets` and shows each change at once, from this page or from anywhere else.
// A change made here goes out at once, one request at a time per control, the latest value winning.

import { put, name } from "./api.js";
import { h, number } from "./dom.js";
import { on, emit } from "./live.js";

const STEPS = 1000;

/** key → Set of widgets showing that control. */
const widgets = new Map();
/** key → the control's last known description (ranges, value, text). */
export const known = new Map();

export const controlKey = (engine, plugin, symbol) => `${engine}/${plugin}/${symbol}`;

on("control", (c) => update(controlKey(c.engine, c.plugin, c.symbol), c.value, c.text, true));
on("plugins", (plugins) => plugins && learnPlugins(plugins));

/** Takes a plugin list's controls as the truth (after GET /api/plugins). */
export function learnPlugins(plugins) {
  known.clear();
  for (const p of plugins || []) {
    for (const c of p.controls) {
      const key = controlKey(p.engine, p.name, c.symbol);
      known.set(key, { ...c, engine: p.engine, plugin: p.name, pluginLabel: p.label });
      update(key, c.value, c.text, true);
    }
  }
}

function update(key, value, text, fromEvent) {
  const c = known.get(key);
  if (c) {
    c.value = value;
    c.text = text;
  }
  for (const w of widgets.get(key) || []) w.show(value, text, fromEvent);
}

/** The value in its unit, when the server gave none: a scale point's label, or the number and the unit symbol. */
export function formatValue(c, value) {
  if (value === null || value === undefined) return "–";
  const point = (c.scalePoints || []).find((p) => Math.abs(p.value - value) < 1e-6);
  if (point) return point.label;
  if (c.toggle) return value >= 0.5 ? "on" : "off";
  return number(value) + (c.unitSymbol ? " " + c.unitSymbol : "");
}

function isLog(c) {
  return c.logarithmic && c.minimum > 0 && c.maximum > c.minimum;
}

function toPosition(c, v) {
  const lo = c.minimum ?? 0, hi = c.maximum ?? 1;
  if (hi <= lo) return 0;
  const x = isLog(c) ? Math.log(v / lo) / Math.log(hi / lo) : (v - lo) / (hi - lo);
  return Math.round(Math.min(1, Math.max(0, x)) * STEPS);
}

function fromPosition(c, pos) {
  const lo = c.minimum ?? 0, hi = c.maximum ?? 1;
  const x = pos / STEPS;
  let v = isLog(c) ? lo * (hi / lo) ** x : lo + (hi - lo) * x;
  if (c.integer) v = Math.round(v);
  return v;
}

// ---- Sending: one request per control at a time; a value set meanwhile goes when it is answered.

const sending = new Map();

function send(key, value) {
  const c = known.get(key);
  if (!c) return;
  if (sending.has(key)) {
    sending.set(key, { value });
    return;
  }
  sending.set(key, null);
  const path = `engines/${name(c.engine)}/plugins/${name(c.plugin)}/controls/${name(c.symbol)}`;
  put(path, { value })
    .then((answer) => update(key, answer.value, answer.text, false))
    .catch((e) => emit("problem", `${c.plugin} ${c.symbol}: ${e.message}`))
    .finally(() => {
      const next = sending.get(key);
      sending.delete(key);
      if (next) send(key, next.value);
    });
}

/**
 * The widget for the control `engine/plugin/symbol`. `options.label` overrides the visible name (favourites
 * show the plugin too); `options.onPin` adds a pin button.
 */
export function controlWidget(engine, plugin, symbol, options = {}) {
  const key = controlKey(engine, plugin, symbol);
  const c = known.get(key);
  if (!c) return h("div", { class: "control missing" }, `${plugin} ${symbol}: not in the running chain`);
  const id = "c-" + key.replace(/[^A-Za-z0-9]/g, "-") + "-" + Math.random().toString(36).slice(2, 7);
  const label = options.label || c.name || symbol;
  const fullName = `${c.pluginLabel || plugin} (${plugin}): ${c.name || symbol}`;
  let touchedAt = 0;
  let dragging = false;
  const busy = () => dragging || Date.now() - touchedAt < 600;

  const valueBox = h("input", {
    type: "text",
    class: "value",
    inputmode: "decimal",
    autocomplete: "off",
    spellcheck: false,
    "aria-label": `${fullName}, value in its unit`,
    onfocus: () => valueBox.select(),
    onkeydown: (e) => {
      if (e.key === "Enter") valueBox.blur();
      if (e.key === "Escape") {
        valueBox.value = c.text || formatValue(c, c.value);
        valueBox.blur();
      }
    },
    onchange: () => {
      const s = valueBox.value.trim();
      if (!s) return;
      touchedAt = Date.now();
      send(key, /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(s) ? Number(s) : s);
    },
  });

  let input;
  const enumerated = (c.scalePoints || []).length > 0 && (c.enumeration || c.integer);
  if (c.toggle) {
    input = h("input", {
      type: "checkbox",
      role: "switch",
      id,
      class: "switch",
      onchange: () => {
        touchedAt = Date.now();
        send(key, input.checked ? (c.maximum ?? 1) : (c.minimum ?? 0));
      },
    });
  } else if (enumerated) {
    input = h("select", {
      id,
      onchange: () => {
        touchedAt = Date.now();
        send(key, Number(input.value));
      },
    }, c.scalePoints.map((p) => h("option", { value: String(p.value) }, p.label)));
  } else {
    input = h("input", {
      type: "range",
      id,
      min: 0,
      max: STEPS,
      step: 1,
      oninput: () => {
        touchedAt = Date.now();
        const v = fromPosition(c, Number(input.value));
        valueBox.value = formatValue(c, v);
        input.setAttribute("aria-valuetext", valueBox.value);
        send(key, v);
      },
      onpointerdown: () => (dragging = true),
      onpointerup: () => {
        dragging = false;
        touchedAt = Date.now();
      },
      onpointercancel: () => (dragging = false),
      onkeydown: (e) => {
        // Arrows move 1 % (Shift: 0.1 %), Page keys 10 %; integers move by one.
        const big = { PageUp: 100, PageDown: -100 }[e.key];
        const small = { ArrowUp: 10, ArrowRight: 10, ArrowDown: -10, ArrowLeft: -10 }[e.key];
        if (big === undefined && small === undefined) return;
        e.preventDefault();
        let pos;
        if (c.integer && !big) {
          pos = toPosition(c, Math.round(fromPosition(c, Number(input.value))) + Math.sign(small));
        } else {
          pos = Number(input.value) + (big ?? (e.shiftKey ? Math.sign(small) : small));
        }
        input.value = String(Math.min(STEPS, Math.max(0, pos)));
        input.dispatchEvent(new Event("input"));
      },
    });
  }
  input.setAttribute("aria-label", fullName);

  // The value box is as wide as the longest text it can show (a scale point's label such as "-3dB @freq, flat", or
  // a bound in its unit), so no label is cut. A list of named values shows its label in the list itself, and a switch
  // its state: neither has a box (one row less on a phone).
  const widest = Math.max(...[c.minimum, c.maximum].filter(Number.isFinite).map((v) => formatValue(c, v).length),
    ...(c.scalePoints || []).map((p) => p.label.length), 0);
  // Wider than the usual box: sized to fit; wider than half a phone's row: on a row of its own.
  const wide = !enumerated && !c.toggle && widest > 9;
  if (wide) valueBox.style.width = `${widest + 2}ch`;
  const widget = h("div", { class: "control" + (c.toggle ? " toggle" : "") + (enumerated ? " enum" : "")
    + (wide ? (widest > 14 ? " wide long" : " wide") : ""),
    dataset: { key, name: `${c.name || symbol} ${symbol}`.toLowerCase() } },
    h("label", { for: id, title: `${symbol}${c.unit ? " (" + c.unit + ")" : ""}` }, label),
    input,
    enumerated || c.toggle ? null : valueBox,
    options.onPin ? options.onPin(key) : null);

  const self = {
    show(value, textValue, fromEvent) {
      if (fromEvent && busy()) return;
      const t = textValue || formatValue(c, value);
      if (document.activeElement !== valueBox) valueBox.value = t;
      if (value === null || value === undefined) return;
      if (c.toggle) input.checked = value >= ((c.minimum ?? 0) + (c.maximum ?? 1)) / 2;
      else if (enumerated) input.value = String(c.scalePoints.reduce((a, p) => (Math.abs(p.value - value) < Math.abs(a.value - value) ? p : a)).value);
      else if (!dragging) {
        input.value = String(toPosition(c, value));
        input.setAttribute("aria-valuetext", t);
      }
      widget.dataset.value = String(value);
    },
  };
  self.element = widget;
  self.born = Date.now();
  self.show(c.value, c.text, false);
  prune();
  if (!widgets.has(key)) widgets.set(key, new Set());
  widgets.get(key).add(self);
  return widget;
}

/** Forgets widgets that left the page (those just made may not be in it yet). */
function prune() {
  const old = Date.now() - 1000;
  for (const [key, set] of widgets) {
    for (const w of set) if (w.born < old && !w.element.isConnected) set.delete(w);
    if (!set.size) widgets.delete(key);
  }
}
