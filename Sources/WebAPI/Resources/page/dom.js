// Small helpers for building the page and writing numbers the way a stage wants to read them.

/**
 * Makes an element: h("button", {class: "x", onclick: f, "aria-label": "…"}, "text", child…).
 * Attributes starting with "on" become listeners; `false`/`null` attributes are left out; children may be
 * strings, nodes, arrays or null.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "style") el.style.cssText = value; // through CSSOM: the content policy refuses style attributes
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key in el && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** Sets text only when it changed (cheap to call at meter rate). */
export function text(el, value) {
  const s = String(value);
  if (el.textContent !== s) el.textContent = s;
}

/** A card: a titled section of a tab. */
export function card(title, ...children) {
  const id = "card-" + title.toLowerCase().replace(/[^a-z0-9]+/g, "-");
  return h("section", { class: "card", "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

/** A definition list row pair for key/value facts. */
export function fact(label, valueEl) {
  return [h("dt", {}, label), h("dd", {}, valueEl)];
}

/** A level from the server as a number: silence ("-inf", or the old servers' -200) is -Infinity. */
export function level(value) {
  if (value === null || value === undefined) return NaN;
  const n = typeof value === "string" ? Number.parseFloat(value.replace(/^-inf.*/i, "-Infinity")) : value;
  return Number.isFinite(n) && n <= -199 ? -Infinity : n;
}

/** "-6.0" for decibels; silence as "-inf", nothing known as "–". */
export function dB(value, digits = 1) {
  if (value === null || value === undefined) return "–";
  const n = level(value);
  if (n === -Infinity) return "-inf";
  if (!Number.isFinite(n)) return "–";
  return n.toFixed(digits);
}

/** Seconds as H:MM:SS or M:SS(.t). */
export function clock(seconds, tenths = false) {
  if (!Number.isFinite(seconds) || seconds < 0) seconds = 0;
  const whole = Math.floor(seconds);
  const hours = Math.floor(whole / 3600), minutes = Math.floor((whole % 3600) / 60), secs = whole % 60;
  const mm = hours ? String(minutes).padStart(2, "0") : String(minutes);
  let out = (hours ? hours + ":" : "") + mm + ":" + String(secs).padStart(2, "0");
  if (tenths) out += "." + Math.floor((seconds - whole) * 10);
  return out;
}

/** Bytes as "12.3 GB". */
export function bytes(n) {
  if (!Number.isFinite(n)) return "–";
  const units = ["B", "kB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return (i ? n.toFixed(n < 10 ? 2 : 1) : n) + " " + units[i];
}

/** A plain number with no more digits than it needs. */
export function number(n, digits = 3) {
  if (!Number.isFinite(n)) return String(n);
  const abs = Math.abs(n);
  const d = abs >= 1000 ? 0 : abs >= 100 ? 1 : abs >= 10 ? Math.min(digits, 2) : digits;
  return String(Number.parseFloat(n.toFixed(d)));
}

/** The last part of a path. */
export const basename = (path) => String(path || "").split("/").pop();

/** Debounces `fn` to one call per `ms`, the last arguments winning. */
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

/**
 * Wraps an async `fn(value)` so that one call runs at a time: a value given meanwhile waits, and only the latest
 * one (a slider being dragged sends as fast as the server answers, never a queue of stale values).
 */
export function latest(fn) {
  let running = false, waiting = null;
  const run = async (value) => {
    running = true;
    try {
      await fn(value);
    } finally {
      running = false;
      if (waiting) {
        const next = waiting;
        waiting = null;
        run(next.value);
      }
    }
  };
  return (value) => (running ? (waiting = { value }) : run(value));
}
