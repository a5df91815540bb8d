// Session presets: the preset files of the session folder, applied by difference (only what differs changes),
// and the running setup saved as a new one. The one running is marked: as the server says (the status's `preset`,
// or a list entry's `running`), else, for a server that does not say, the one this page last switched to, marked as
// only that ("switched to from this page"), since another client may have switched since.

import { post } from "./api.js";
import { h, card, fill } from "./dom.js";
import { store, on, emit, refresh, refreshAll } from "./live.js";

let list;

export function mount(root) {
  list = h("ul", { class: "presets", "aria-label": "Presets in the session folder" });
  const nameInput = h("input", { type: "text", id: "preset-name", required: true, autocomplete: "off",
    pattern: "[^\\/]+", placeholder: "e.g. sunday-service" });
  root.append(
    card("Presets", h("p", { class: "hint" }, "Applying a preset changes only what differs from what runs: takes and playback go on."), list),
    card("Save the running setup",
      h("form", { class: "row", onsubmit: async (e) => {
        e.preventDefault();
        try {
          const r = await post("presets/save", { name: nameInput.value.trim() });
          emit("problem", `Saved: ${r.detail}`);
          nameInput.value = "";
        } catch (err) {
          emit("problem", err.message);
        }
        refresh("presets");
      } },
      h("label", { for: "preset-name", class: "grow" }, "Name ", nameInput),
      h("button", { type: "submit", class: "primary", id: "preset-save" }, "Save"))));
  on("presets", draw);
  // The running preset may change with any status (another client switched): drawn again when it did.
  on("status", () => {
    if (store.presets && runningPath() !== drawnRunning) draw(store.presets);
  });
}

/** The file this page switched to last, and when ({path, at}), for a server that does not say which runs. */
let switchedHere = null;
let drawnRunning;

/** The running preset's path as the server says it, or undefined when it does not say (null: none runs). */
function serverRunning() {
  const p = store.status?.preset;
  if (p !== undefined) return p === null ? null : typeof p === "string" ? p : p.path ?? null;
  const entry = (store.presets || []).find((x) => x.running === true);
  if (entry) return entry.path;
  return (store.presets || []).some((x) => "running" in x) ? null : undefined;
}

function runningPath() {
  const s = serverRunning();
  return s === undefined ? switchedHere?.path ?? null : s;
}

export function shown(on) {
  if (on) refresh("presets");
}

function draw(presets) {
  if (!presets) {
    if (store.missing.has("presets")) fill(list, h("li", { class: "hint" }, "This server does not list presets."));
    return;
  }
  if (!presets.length) {
    fill(list, h("li", { class: "hint" }, "No preset files in the session folder."));
    return;
  }
  const told = serverRunning() !== undefined;
  const running = runningPath();
  drawnRunning = running;
  const same = (a, b) => a && b && (a === b || a.endsWith("/" + b) || b.endsWith("/" + a));
  fill(list, presets.map((p) => {
    const on = same(p.path, running);
    const badge = on ? h("span", { class: "badge running-badge" },
      told ? "running" : `switched to from this page at ${switchedHere.at}`) : null;
    return h("li", { class: "row spread" + (on ? " running" : ""), dataset: { path: p.path }, "aria-current": on ? "true" : null },
      h("span", {}, h("strong", {}, p.name), badge, h("small", { class: "uri" }, " ", p.path)),
      h("button", { type: "button", "aria-label": `Switch to preset ${p.name}`, onclick: (e) => apply(p, e.currentTarget) }, "Switch to"));
  }));
}

async function apply(p, button) {
  // Two presses: switching a whole setup by a stray touch would hurt.
  if (button.dataset.armed !== "1") {
    button.dataset.armed = "1";
    button.textContent = "Press again to switch";
    setTimeout(() => {
      button.dataset.armed = "";
      button.textContent = "Switch to";
    }, 3000);
    return;
  }
  button.dataset.armed = "";
  button.textContent = "Switch to";
  try {
    const r = await post("presets/apply", { path: p.path });
    switchedHere = { path: p.path, at: new Date().toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) };
    emit("problem", `${p.name}: ${r.detail}`);
  } catch (e) {
    emit("problem", e.message);
  }
  refreshAll();
}
