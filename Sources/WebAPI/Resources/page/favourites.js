// Favourites: controls of any plugin pinned together on one page. The list is the server's (GET/PUT
// /api/favourites), so every device shows the same, and follows it: a `favourites-changed` event (a PUT by any
// client) has it read again. Only a server without that route has it kept in this browser instead.

import { put } from "./api.js";
import { h, card, fill, text } from "./dom.js";
import { store, on, emit, refresh } from "./live.js";
import { controlWidget, controlKey, known } from "./controls.js";

const LOCAL = "tandem.favourites";
let root, list, note;
let pins = [];

const keyOf = (f) => controlKey(f.engine, f.plugin, f.symbol);
const local = () => store.missing.has("favourites");

export function mount(el) {
  root = el;
  list = h("ul", { class: "favourites", "aria-label": "Pinned controls" });
  note = h("p", { class: "hint" });
  root.append(card("Favourites", note, list));
  on("favourites", (f) => {
    if (local()) {
      try {
        pins = JSON.parse(localStorage.getItem(LOCAL) || "[]");
      } catch {
        pins = [];
      }
    } else if (Array.isArray(f)) {
      pins = f;
    }
    render();
  });
  // Controls come with the plugin list: a pin whose plugin came back (or went) is drawn again.
  on("plugins", () => render());
}

export function shown(on) {
  if (on) refresh("favourites");
}

const isPinned = (key) => pins.some((f) => keyOf(f) === key);

/** A star button that pins or unpins a control; every such button follows the list. */
export function pinButton(key) {
  const b = h("button", { class: "pin", type: "button", dataset: { key }, onclick: () => toggle(key) }, "☆");
  showPin(b);
  return b;
}

function showPin(b) {
  const on = isPinned(b.dataset.key);
  const c = known.get(b.dataset.key);
  b.setAttribute("aria-pressed", String(on));
  b.setAttribute("aria-label", `${on ? "Unpin" : "Pin"} ${c ? `${c.plugin} ${c.name || c.symbol}` : b.dataset.key} ${on ? "from" : "to"} favourites`);
  text(b, on ? "★" : "☆");
}

function toggle(key) {
  if (isPinned(key)) {
    pins = pins.filter((f) => keyOf(f) !== key);
  } else {
    const c = known.get(key);
    if (!c) return;
    pins = [...pins, { engine: c.engine, plugin: c.plugin, symbol: c.symbol }];
  }
  save();
}

async function save() {
  render();
  if (local()) {
    localStorage.setItem(LOCAL, JSON.stringify(pins));
    return;
  }
  try {
    await put("favourites", pins);
  } catch (e) {
    emit("problem", `Favourites not saved: ${e.message}`);
  }
  refresh("favourites");
}

let drawn = "";

function render() {
  for (const b of document.querySelectorAll("button.pin")) showPin(b);
  if (!list) return;
  // Drawn again only when the pins, or which of them run, changed (a widget being used is not replaced).
  const sig = JSON.stringify([local(), pins.map((f) => [keyOf(f), known.has(keyOf(f))])]);
  if (sig === drawn) return;
  drawn = sig;
  text(note, local()
    ? "Kept in this browser only: this server does not store favourites. Pin controls with ☆ on the Racks tab."
    : "Shared by every device that opens this session. Pin controls with ☆ on the Racks tab.");
  if (!pins.length) {
    fill(list, h("li", { class: "hint" }, "Nothing pinned yet."));
    return;
  }
  fill(list, pins.map((f, i) => {
    const c = known.get(keyOf(f));
    return h("li", { class: "favourite", dataset: { key: keyOf(f) } },
      h("div", { class: "where" }, `${f.engine} · ${f.plugin}`),
      c ? controlWidget(f.engine, f.plugin, f.symbol, { label: c.name || f.symbol })
        : h("p", { class: "hint" }, `${f.symbol}: not in the running session`),
      h("div", { class: "row tools" },
        h("button", { type: "button", "aria-label": `Move ${f.plugin} ${f.symbol} up`, disabled: i === 0, onclick: () => move(i, -1) }, "↑"),
        h("button", { type: "button", "aria-label": `Move ${f.plugin} ${f.symbol} down`, disabled: i === pins.length - 1, onclick: () => move(i, 1) }, "↓"),
        h("button", { type: "button", "aria-label": `Unpin ${f.plugin} ${f.symbol}`, onclick: () => toggle(keyOf(f)) }, "Unpin")));
  }));
}

function move(i, by) {
  const next = [...pins];
  [next[i], next[i + by]] = [next[i + by], next[i]];
  pins = next;
  save();
}
