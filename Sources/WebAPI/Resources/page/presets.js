// Session presets: the preset files of the session folder, applied by difference (only what differs changes),
// and the running setup saved as a new one.

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
  fill(list, presets.map((p) => h("li", { class: "row spread", dataset: { path: p.path } },
    h("span", {}, h("strong", {}, p.name), h("small", { class: "uri" }, " ", p.path)),
    h("button", { type: "button", "aria-label": `Switch to preset ${p.name}`, onclick: (e) => apply(p, e.currentTarget) }, "Switch to"))));
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
    emit("problem", `${p.name}: ${r.detail}`);
  } catch (e) {
    emit("problem", e.message);
  }
  refreshAll();
}
