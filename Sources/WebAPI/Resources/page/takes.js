// Takes: the session folder's takes, newest first, each with its report, its files to play here (seekable: the
// server answers ranges) or download, and to load into the player.

import { get, post, withToken, name } from "./api.js";
import { h, card, fill, clock, basename } from "./dom.js";
import { store, on, emit, refresh } from "./live.js";

let list;
let drawn = "";

export function mount(root) {
  list = h("ol", { class: "takes", reversed: true, "aria-label": "Takes, newest first" });
  root.append(card("Takes", h("div", { class: "row" }, h("button", { type: "button", onclick: () => refresh("takes") }, "Read again")), list));
  on("takes", draw);
}

export function shown(on) {
  if (on) refresh("takes");
}

const playable = (f) => /\.(wav|rf64|flac|ogg|opus|mp3)$/i.test(f);

function draw(takes) {
  if (!takes) {
    if (store.missing.has("takes")) fill(list, h("li", { class: "hint" }, "This server does not list takes."));
    return;
  }
  const sig = JSON.stringify(takes);
  if (sig === drawn) return;
  drawn = sig;
  if (!takes.length) {
    fill(list, h("li", { class: "hint" }, "No takes in the session folder yet."));
    return;
  }
  // Players already on the page (maybe playing) are kept.
  const old = new Map([...list.querySelectorAll("li.take")].map((li) => [li.dataset.id, li]));
  fill(list, [...takes].reverse().map((t) => {
    const previous = old.get(t.id);
    if (previous && previous.dataset.sig === JSON.stringify(t)) return previous;
    return takeItem(t);
  }));
}

function takeItem(t) {
  const seconds = t.sampleRate ? t.frames / t.sampleRate : 0;
  const report = h("div", { class: "report" }, h("p", { class: "hint" }, "Open to read the report."));
  const details = h("details", {
    ontoggle: () => details.open && loadReport(t, report),
  }, h("summary", {}, "Report"), report);
  const files = t.files.map((f, i) => {
    const url = withToken(`/api/takes/${name(t.id)}/files/${i}`);
    return h("li", { class: "file" },
      h("div", { class: "row spread" },
        h("span", { class: "name" }, basename(f)),
        h("span", { class: "row" },
          h("a", { href: url, download: basename(f), class: "button", "aria-label": `Download ${basename(f)}`, dataset: { file: String(i) } }, "Download"),
          playable(f) ? h("button", { type: "button", "aria-label": `Load ${basename(f)} into the player`,
            onclick: () => post("player/load", { files: [f] }).then((r) => emit("problem", r.detail)).catch((e) => emit("problem", e.message)) }, "To player") : null)),
      playable(f) ? h("audio", { controls: true, preload: "none", src: url, "aria-label": `Play ${basename(f)} here` }) : null);
  });
  return h("li", { class: "take", dataset: { id: t.id, sig: JSON.stringify(t) } },
    h("div", { class: "row spread" },
      h("h3", {}, `Take ${t.take}`),
      h("span", { class: "badge", dataset: { state: t.ended } }, t.ended)),
    h("p", { class: "hint" }, `${t.id} · ${clock(seconds, true)} · ${t.channels} ch · ${t.sampleRate} Hz · ${t.frames} frames`),
    h("ul", { class: "files" }, files),
    details);
}

async function loadReport(t, el) {
  try {
    const r = await get(`takes/${name(t.id)}`);
    const facts = [];
    const add = (k, v) => v !== undefined && v !== null && v !== "" && facts.push(h("dt", {}, k), h("dd", {}, String(v)));
    const rate = r.sampleRate || t.sampleRate;
    add("Started", r.startedAt && new Date(r.startedAt).toLocaleString());
    add("Ended", r.ended);
    add("Format", [r.format, r.sampleFormat].filter(Boolean).join(" "));
    add("Losses", `${r.droppedFrames ?? 0} dropped, ${r.missedFrames ?? 0} missed frames; ${(r.drops || []).length} gap(s); ${r.xruns ?? 0} xrun(s)`);
    add("Markers", (r.markers || []).map((m) => `${m.label || "marker"} at ${clock(m.frame / rate, true)}`).join(", ") || "none");
    add("Ports", (r.ports || []).map((p) => `${p.name} ← ${(p.connections || []).join(", ") || "nothing"}`).join("; "));
    fill(el, h("dl", { class: "facts" }, facts), h("details", {}, h("summary", {}, "Whole report (JSON)"),
      h("pre", {}, JSON.stringify(r, null, 2))));
  } catch (e) {
    fill(el, h("p", { class: "bad" }, e.message));
  }
}
