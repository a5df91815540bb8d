// Scenes (issue 48): a row of large buttons, one per scene of the session, the one recalled last lit; a tap recalls
// it. The list is the server's (`GET /api/scenes`); a recall or a morph made anywhere (MIDI, OSC, another page) moves
// the light from its event (live.js), an edit reads the list again. Folded below: the rig saved as a scene, and a
// slider that morphs between two scenes.

import { post, put, name } from "./api.js";
import { h, card, fill, text, number, latest } from "./dom.js";
import { store, on, emit, refresh } from "./live.js";

let el = {};
/** When the morph slider was last moved here: a morph event from elsewhere does not move it meanwhile. */
let morphAt = 0;

/** The Scenes card (placed by the Overview). */
export function sceneCard() {
  el.row = h("div", { class: "scenes", id: "scenes", role: "group", "aria-label": "Scenes: tap to recall" });
  el.hint = h("p", { class: "hint", id: "scenes-hint" }, "No scenes yet: save the running rig as one below, or write [[scene]] tables in the preset.");
  el.state = h("p", { class: "hint", id: "scene-state", "aria-live": "polite" });

  const saveName = h("input", { type: "text", id: "scene-name", required: true, autocomplete: "off", maxlength: 64,
    placeholder: "e.g. chorus" });
  const save = h("form", { class: "row", onsubmit: async (e) => {
    e.preventDefault();
    try {
      const r = await post("scenes", { name: saveName.value.trim() });
      emit("problem", r.detail);
      saveName.value = "";
    } catch (err) {
      emit("problem", err.message);
    }
    refresh("scenes");
  } },
  h("label", { for: "scene-name", class: "grow" }, "Save the rig as ", saveName),
  h("button", { type: "submit", id: "scene-save" }, "Save"));

  el.from = h("select", { id: "morph-from", "aria-label": "Morph from scene", onchange: () => sendMorph() });
  el.to = h("select", { id: "morph-to", "aria-label": "Morph to scene", onchange: () => sendMorph() });
  el.position = h("output", { for: "morph", id: "morph-value" }, "0");
  el.morph = h("input", { type: "range", id: "morph", min: 0, max: 1, step: 0.01, value: 0,
    "aria-label": "Morph position, 0 the first scene, 1 the second",
    onpointerdown: () => (morphAt = Infinity),
    onpointerup: () => (morphAt = Date.now()),
    onpointercancel: () => (morphAt = Date.now()),
    oninput: () => {
      morphAt = Date.now();
      sendMorph();
    } });
  el.more = h("details", { class: "scene-more" }, h("summary", {}, "Save, morph"),
    save,
    h("div", { class: "row morph-pick" }, el.from, h("span", { "aria-hidden": "true" }, "→"), el.to),
    h("div", { class: "control" }, h("label", { for: "morph" }, "Morph"), el.morph, el.position));

  el.card = card("Scenes", el.row, el.hint, el.state, el.more);
  on("scenes", draw);
  return el.card;
}

const morphNow = latest(async ({ from, to, position }) => {
  try {
    await put("scenes/morph", { from, to, position });
  } catch (e) {
    emit("problem", e.message);
    morphAt = 0;
    refresh("scenes");
  }
});

function sendMorph() {
  const from = el.from.value, to = el.to.value, position = Number(el.morph.value);
  text(el.position, number(position, 2));
  if (!from || !to || from === to) return;
  morphNow({ from, to, position });
}

async function recall(scene, button) {
  button.classList.add("pending");
  try {
    await post(`scenes/${name(scene)}/recall`);
    // The session did it: lit now; its event says the same (and carries others' recalls).
    if (store.scenes) {
      store.scenes.current = scene;
      delete store.scenes.morph;
      emit("scenes", store.scenes);
    }
  } catch (e) {
    emit("problem", e.message);
    refresh("scenes");
  } finally {
    button.classList.remove("pending");
  }
}

/** The names drawn last, so a change of the lit scene only moves the light. */
let drawn = "";

function draw(list) {
  // A server without scenes (an older one) shows no card.
  el.card.hidden = store.missing.has("scenes");
  const scenes = list?.scenes || [];
  const names = scenes.map((s) => s.name);
  const key = JSON.stringify(names);
  if (key !== drawn) {
    drawn = key;
    fill(el.row, scenes.map((s) => h("button", { class: "scene", type: "button", dataset: { scene: s.name },
      title: `Recall '${s.name}', gliding over ${number(s.rampMS)} ms`,
      onclick: (e) => recall(s.name, e.currentTarget) }, s.name)));
    for (const select of [el.from, el.to]) {
      const was = select.value;
      fill(select, names.map((n) => h("option", { value: n }, n)));
      if (names.includes(was)) select.value = was;
    }
    if (!names.includes(el.from.value) && names.length) el.from.value = names[0];
    if ((!names.includes(el.to.value) || el.to.value === el.from.value) && names.length > 1) el.to.value = names[1];
  }
  el.row.hidden = !scenes.length;
  el.hint.hidden = !!scenes.length;
  const current = list?.current ?? null;
  for (const b of el.row.children) b.setAttribute("aria-pressed", String(b.dataset.scene === current));
  const m = list?.morph;
  if (m && Date.now() - morphAt > 1000) {
    if (names.includes(m.from)) el.from.value = m.from;
    if (names.includes(m.to)) el.to.value = m.to;
    el.morph.value = String(m.position);
    text(el.position, number(m.position, 2));
  }
  text(el.state, m ? `Morph: ${number(m.position, 2)} of the way from '${m.from}' to '${m.to}'`
    : current ? `Scene: ${current}` + (typeof list.lastLagMS === "number"
      ? ` (isolated racks ${number(list.lastLagMS, 1)} ms later)` : "")
      + (list.missing ? `; ${list.missing} value(s) not applied` : "")
      : scenes.length ? "No scene recalled yet" : "");
}
