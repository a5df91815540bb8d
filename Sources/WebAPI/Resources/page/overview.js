// Overview: the scenes (scenes.js), the server, the session's health, the recorder with its meters, the player,
// and the event log.

import { post, put } from "./api.js";
import { h, card, fact, text, dB, level, clock, bytes, basename, number, latest } from "./dom.js";
import { store, on, emit, refresh } from "./live.js";
import { sceneCard } from "./scenes.js";

let el = {};

/** Runs a command; a refusal is said in the toast. */
async function command(path, body) {
  try {
    const r = await post(path, body);
    refresh("status");
    return r;
  } catch (e) {
    emit("problem", e.message);
    return null;
  }
}

export function mount(root) {
  const v = () => h("span", {}, "–");
  el = {
    server: v(), state: v(), rate: v(), period: v(), dsp: h("span", { id: "server-dsp" }, "–"),
    xruns: h("span", { id: "server-xruns" }, "–"), engineXruns: v(), heaviest: v(),
    health: h("ul", { class: "health" }),
    recState: h("span", { class: "badge", id: "rec-state" }, "–"), take: v(), elapsed: h("span", { class: "big" }, "0:00"), disk: v(),
    recFiles: v(), recCounters: h("span", { id: "rec-losses" }, "–"),
    marksTitle: h("h3", { id: "marks-title", class: "sub" }, "Markers"),
    marks: h("ol", { class: "marks", id: "marks", "aria-labelledby": "marks-title", "aria-live": "polite" }),
    meters: h("div", { class: "meters", role: "group", "aria-label": "Input meters" }),
    loudness: h("div", { class: "loudness", id: "loudness", role: "group", "aria-label": "Loudness (EBU R128)" }),
    playState: h("span", { class: "badge", id: "play-state" }, "–"), item: v(), position: h("span", { class: "big" }, "0:00"),
    queue: h("ol", { class: "queue", id: "queue", "aria-labelledby": "queue-title" }),
    log: h("ol", { class: "log", role: "log", "aria-live": "off", "aria-label": "Session events", tabindex: 0 }),
  };

  const markLabel = h("input", { type: "text", id: "mark-label", placeholder: "label (optional)", autocomplete: "off" });
  const recorder = card("Recorder",
    h("div", { class: "row spread" }, el.recState, el.elapsed),
    h("dl", { class: "facts" }, fact("Take", el.take), fact("Disk left", el.disk), fact("Files", el.recFiles),
      fact("Losses", el.recCounters)),
    h("div", { class: "row buttons" },
      h("button", { class: "rec", id: "rec-start", onclick: () => command("recorder/start") }, "● Record"),
      h("button", { id: "rec-stop", onclick: () => command("recorder/stop") }, "■ Stop"),
      h("button", { id: "rec-arm", onclick: () => command("recorder/arm"), title: "Stop any take and meter, writing nothing" }, "Arm"),
      h("button", { id: "rec-rotate", onclick: () => command("recorder/rotate"), title: "Start a new chunk of the running take" }, "New chunk")),
    h("form", { class: "row", onsubmit: (e) => {
      e.preventDefault();
      // The list below shows it when the server tells (a `marker-added` event), as it does others' markers.
      command("recorder/mark", { label: markLabel.value.trim() });
      markLabel.value = "";
    } },
    h("label", { for: "mark-label", class: "grow" }, "Marker ", markLabel),
    h("button", { type: "submit", id: "rec-mark" }, "Mark")),
    el.marksTitle, el.marks);

  el.seek = h("input", { type: "range", id: "seek", min: 0, max: 1, step: 0.1, value: 0, "aria-label": "Playback position in seconds",
    onpointerdown: () => (seeking = true),
    onpointerup: () => (seeking = false),
    oninput: () => {
      seekAt = Date.now();
      text(el.position, clock(Number(el.seek.value)));
    },
    onchange: () => {
      seekAt = Date.now();
      command("player/seek", { seconds: Number(el.seek.value) });
    } });
  el.duration = h("span", {}, "0:00");
  const loadPath = h("input", { type: "text", id: "load-path", list: "load-candidates", placeholder: "file in the session folder",
    autocomplete: "off", required: true });
  el.candidates = h("datalist", { id: "load-candidates" });
  el.gainOut = h("output", { for: "player-gain", id: "player-gain-value" }, "–");
  const sendGain = latest((v) => put("player/gain", { gain: v }).catch((e) => {
    emit("problem", e.message);
    gainAt = 0;
    refresh("status");
  }));
  el.gain = h("input", { type: "range", id: "player-gain", min: -60, max: 24, step: 0.5, value: 0,
    "aria-label": "Player gain in dB",
    onpointerdown: () => (gainAt = Infinity),
    onpointerup: () => (gainAt = Date.now()),
    onpointercancel: () => (gainAt = Date.now()),
    oninput: () => {
      gainAt = Date.now();
      const v = Number(el.gain.value);
      text(el.gainOut, `${number(v)} dB`);
      el.gain.setAttribute("aria-valuetext", `${number(v)} dB`);
      sendGain(v);
    } });
  const player = card("Player",
    h("div", { class: "row spread" }, el.playState, h("span", {}, el.position, " / ", el.duration)),
    el.seek,
    h("dl", { class: "facts" }, fact("Item", el.item)),
    h("div", { class: "control" }, h("label", { for: "player-gain" }, "Gain"), el.gain, el.gainOut),
    h("div", { class: "row buttons" },
      h("button", { id: "play", onclick: () => command("player/play") }, "▶ Play"),
      h("button", { id: "pause", onclick: () => command("player/pause") }, "❚❚ Pause"),
      h("button", { id: "stop", onclick: () => command("player/stop") }, "■ Stop"),
      h("button", { id: "next", onclick: () => command("player/next") }, "Next ›")),
    h("form", { class: "row", onsubmit: (e) => {
      e.preventDefault();
      command("player/load", { files: [loadPath.value.trim()] }).then((r) => r && emit("problem", r.detail));
    } },
    h("label", { for: "load-path", class: "grow" }, "Load ", loadPath), el.candidates,
    h("button", { type: "submit", id: "load" }, "Load")),
    h("h3", { id: "queue-title", class: "sub" }, "Queue"), el.queue);

  const changes = h("input", { type: "checkbox", id: "log-controls", checked: true });
  changes.addEventListener("change", () => el.log.classList.toggle("no-controls", !changes.checked));

  root.append(h("div", { class: "grid" },
    sceneCard(),
    recorder,
    card("Meters", el.meters, h("p", { class: "hint" }, "Bright bar: RMS over 300 ms; dark bar: peak; white tick: peak held 1.5 s; CLIP: full scale in the last 3 s.")),
    card("Loudness", loudnessTarget(), el.loudness,
      h("p", { class: "hint" }, "EBU R128: bar short-term (3 s), tick momentary (400 ms), line the target; I integrated since the take (or the meter) began, LRA the range, TP the true peak.")),
    player,
    card("Server", h("dl", { class: "facts" },
      fact("JACK server", el.server), fact("State", el.state), fact("Sample rate", el.rate), fact("Period", el.period),
      fact("DSP load", el.dsp), fact("Xruns", el.xruns), fact("Heaviest engine", el.heaviest),
      fact("Engines' xruns", el.engineXruns))),
    card("Health", el.health),
    card("Events", h("label", { class: "check" }, changes, " show control changes"), el.log)));

  el.log.addEventListener("scroll", () => {
    if (el.log.clientHeight) follow = el.log.scrollHeight - el.log.scrollTop - el.log.clientHeight < 40;
  });
  on("status", showStatus);
  on("meters", (m) => queueMeters(m));
  on("loudness", (l) => queueLoudness(l));
  on("event", logEvent);
  on("takes", showCandidates);
  on("marker", () => showMarkers());
  setInterval(tick, 100);
}

export function shown(on) {
  if (on && follow) requestAnimationFrame(() => (el.log.scrollTop = el.log.scrollHeight));
}

// ---- Status.

let recSeconds = 0, recAt = 0, recording = false, lastTake = null;
let playSeconds = 0, playAt = 0, playing = false, seeking = false, seekAt = 0, gainAt = 0;
let queueShown = "";

/** What each recorder state reads as. */
const REC_STATES = {
  recording: "● Recording",
  armed: "Armed",
  "waiting-transport": "Waiting for transport",
  "waiting-level": "Waiting for level",
  scheduled: "Scheduled",
};

function showStatus(s) {
  if (!s) return;
  text(el.server, s.server || "–");
  text(el.state, s.serverLost ? "lost: waiting for it" : "running");
  el.state.className = s.serverLost ? "bad" : "good";
  text(el.rate, s.sampleRate ? `${s.sampleRate} Hz` : "–");
  const periodMs = s.sampleRate ? (1000 * s.period) / s.sampleRate : 0;
  text(el.period, s.period ? `${s.period} frames (${periodMs.toFixed(2)} ms)` : "–");
  const load = s.dspLoad;
  text(el.dsp, Number.isFinite(load) ? `${load.toFixed(1)} %` : "not reported");
  el.dsp.className = load >= 80 ? "bad" : "";
  el.dsp.dataset.value = String(load);

  const engines = [];
  if (s.recorder) engines.push(["recorder", s.recorder.cycle, s.recorder.xruns]);
  if (s.player) engines.push(["player", s.player.cycle, s.player.xruns]);
  for (const r of s.racks || []) engines.push([`rack ${r.name}`, r.cycle, r.xruns]);
  let heavy = null;
  for (const [name, cycle] of engines) {
    if (cycle && (!heavy || cycle.p99Micros > heavy[1].p99Micros)) heavy = [name, cycle];
  }
  text(el.heaviest, heavy && periodMs
    ? `${heavy[0]}: ${((heavy[1].p99Micros / 10) / periodMs).toFixed(1)} % of a period (p99), max ${((heavy[1].maxMicros / 10) / periodMs).toFixed(1)} %`
    : "–");
  text(el.xruns, Number.isFinite(s.xruns) ? `${s.xruns} in the JACK server since the session started` : "not reported");
  el.xruns.className = s.xruns > 0 ? "warn" : "";
  el.xruns.dataset.value = String(s.xruns);
  text(el.engineXruns, engines.length ? engines.map(([n, , x]) => `${n} ${x ?? "–"}`).join(" · ") : "–");

  showHealth(s);

  const r = s.recorder;
  if (r) {
    recording = r.recording;
    recSeconds = r.seconds;
    recAt = performance.now();
    const state = r.state || (r.recording ? "recording" : "armed");
    text(el.recState, REC_STATES[state] || state);
    el.recState.dataset.state = state;
    // The status names the take only while it runs: the one that ended stays in view until the next.
    const take = Number.isFinite(r.take) ? r.take : lastTake;
    if (take !== lastTake || recording !== lastRecording) {
      lastTake = take;
      lastRecording = recording;
      showMarkers();
    }
    text(el.take, r.take ?? "–");
    const left = Number.isFinite(r.secondsLeft) ? ` (${clock(r.secondsLeft)} of recording)` : "";
    text(el.disk, Number.isFinite(r.freeBytes) ? bytes(r.freeBytes) + left : "–");
    text(el.recFiles, r.files?.length ? r.files.map(basename).join(", ") : "–");
    const loss = takeLosses(r);
    text(el.recCounters, loss.text + (r.recording ? `; ring ${Math.round((100 * r.ringFill) / Math.max(1, r.ringCapacity))} %` : ""));
    el.recCounters.dataset.frames = String(loss.frames);
  } else {
    text(el.recState, "No recorder");
    el.recState.dataset.state = "none";
  }

  const p = s.player;
  if (p) {
    playing = p.playing && !p.paused;
    if (Date.now() - seekAt > 1500) {
      playSeconds = p.seconds;
      playAt = performance.now();
    }
    text(el.playState, p.playing ? (p.paused ? "Paused" : "▶ Playing") : "Stopped");
    el.playState.dataset.state = p.playing ? (p.paused ? "paused" : "playing") : "stopped";
    el.seek.max = String(Math.max(0.1, p.duration));
    text(el.duration, clock(p.duration));
    text(el.item, p.items ? `${(p.item ?? 0) + 1} of ${p.items}: ${basename(p.path) || "–"}` : "queue empty");
    showQueue(p);
    if (Number.isFinite(p.gainDB)) {
      text(el.gainOut, `${p.gainDB <= -120 ? "-inf" : number(p.gainDB)} dB`);
      el.gainOut.dataset.value = String(p.gainDB);
      if (Date.now() - gainAt > 800) {
        el.gain.value = String(p.gainDB);
        el.gain.setAttribute("aria-valuetext", `${number(p.gainDB)} dB`);
      }
    }
  } else {
    text(el.playState, "No player");
  }
  if (store.stream !== "live") {
    queueMeters(s.meters);
    queueLoudness(s.loudness || []);
  }
}

// The status counts the recorder's dropped and missed frames since the session started, armed time included: a
// cycle the server ran without the recorder while it only metered lost nothing. So the page shows a take's own
// losses: the counters less what they were at the last status read before the take began (a page opened during a
// take has no such read, and says its figures are the session's).
let idleCounters = null;
let lossBase = null;

/** {text, frames, take}: what the running take lost, or that none runs. */
function takeLosses(r) {
  if (!r.recording) {
    idleCounters = { dropped: r.droppedFrames, missed: r.missedFrames };
    lossBase = null;
    return { text: "no take running", frames: 0, take: null };
  }
  if (!lossBase || lossBase.take !== r.take) lossBase = { take: r.take, ...(idleCounters || { session: true }) };
  if (lossBase.session) {
    const frames = r.droppedFrames + r.missedFrames;
    return { text: `dropped ${r.droppedFrames}, missed ${r.missedFrames} frames since the session started`, frames, take: r.take, session: true };
  }
  const dropped = Math.max(0, r.droppedFrames - lossBase.dropped), missed = Math.max(0, r.missedFrames - lossBase.missed);
  return { text: dropped + missed ? `this take: dropped ${dropped}, missed ${missed} frames` : "this take: none", frames: dropped + missed, take: r.take };
}

/** The player's queue, the item playing marked. */
function showQueue(p) {
  const queue = p.queue || [];
  const sig = JSON.stringify([queue, p.item, p.playing]);
  if (sig === queueShown) return;
  queueShown = sig;
  if (!queue.length) {
    el.queue.replaceChildren(h("li", { class: "hint" }, "Nothing queued."));
    return;
  }
  el.queue.replaceChildren(...queue.map((path, i) => h("li", {
    class: i === p.item ? "current" : "", "aria-current": i === p.item && p.playing ? "true" : null, title: path,
  }, basename(path), i === p.item && p.playing ? h("span", { class: "sr" }, " (playing)") : null)));
}

/** The markers of the running take (or of the last one), from the events. */
let lastRecording = false;
function showMarkers() {
  const take = lastTake ?? [...store.markers.keys()].pop() ?? null;
  const marks = (take !== null && take !== undefined && store.markers.get(take)) || [];
  text(el.marksTitle, take === null || take === undefined ? "Markers" : `Markers of take ${take}${lastRecording ? "" : " (ended)"}`);
  el.marks.dataset.take = String(take ?? "");
  if (!marks.length) {
    el.marks.replaceChildren(h("li", { class: "hint" }, take === null || take === undefined ? "No take yet." : "No markers in this take."));
    return;
  }
  el.marks.replaceChildren(...marks.map((m) => h("li", { dataset: { seconds: String(m.seconds), label: m.label } },
    h("span", { class: "at" }, clock(m.seconds, true)), " ", m.label || "marker",
    m.source ? h("small", {}, ` · ${m.source}`) : null)));
  el.marks.scrollTop = el.marks.scrollHeight;
}

function showHealth(s) {
  const items = [];
  const add = (ok, what) => items.push(h("li", { class: ok ? "good" : "bad" }, h("span", { class: "dot", "aria-hidden": "true" }), (ok ? "" : "Problem: ") + what));
  add(!s.serverLost, s.serverLost ? `JACK server '${s.server}' lost` : `JACK server '${s.server}' running`);
  add(store.stream === "live", store.stream === "live" ? "event stream live" : "event stream down (reconnecting)");
  for (const r of s.racks || []) {
    const incidents = (r.crashes || 0) + (r.hangs || 0);
    add(r.running && !incidents, `rack ${r.name}: ${r.running ? "running" : "down"}${r.isolated ? " (isolated)" : ""}`
      + (incidents ? `, ${r.crashes || 0} crash(es), ${r.hangs || 0} hang(s), ${r.restarts || 0} restart(s)` : ""));
  }
  for (const [engine, chain] of Object.entries(s.plugins || {})) {
    for (const problem of chain.problems || []) add(false, `${engine}: ${problem}`);
  }
  if (s.recorder) {
    const loss = takeLosses(s.recorder);
    if (loss.take === null) add(true, `recorder ${(REC_STATES[s.recorder.state] || s.recorder.state || "armed").toLowerCase()}: no take running`);
    else add(loss.frames === 0, loss.frames ? `recorder, take ${loss.take}: ${loss.text.replace(/^this take: /, "")}` : `recorder, take ${loss.take}: no frame lost`);
  }
  if (s.player) add(s.player.underrunFrames === 0, `player underruns: ${s.player.underrunFrames} frames`);
  for (const w of s.workers || []) items.push(h("li", { class: "info" }, h("span", { class: "dot", "aria-hidden": "true" }), w));
  el.health.replaceChildren(...items);
}

function tick() {
  const now = performance.now();
  if (recording) text(el.elapsed, clock(recSeconds + (now - recAt) / 1000, true));
  else text(el.elapsed, clock(recSeconds, true));
  if (!seeking && Date.now() - seekAt > 1500) {
    let pos = playSeconds + (playing ? (now - playAt) / 1000 : 0);
    const max = Number(el.seek.max);
    if (pos > max) pos = max;
    text(el.position, clock(pos));
    el.seek.value = String(pos);
    el.seek.setAttribute("aria-valuetext", clock(pos));
  }
}

function showCandidates(takes) {
  const files = [];
  for (const t of takes || []) for (const f of t.files) if (!/\.mid$/.test(f)) files.push(f);
  el.candidates.replaceChildren(...files.reverse().slice(0, 50).map((f) => h("option", { value: f })));
}

// ---- Meters: drawn once a frame at most, whatever rate they arrive at.

const rows = new Map();
let pending = null;

function queueMeters(meters) {
  if (!meters) return;
  if (!pending) requestAnimationFrame(drawMeters);
  pending = meters;
}

/** dB to a share of the bar: -60 dB and below is empty. */
const share = (db) => (Number.isNaN(db) ? 0 : Math.min(1, Math.max(0, (db + 60) / 60)));

function drawMeters() {
  const meters = pending;
  pending = null;
  if (!meters) return;
  if (rows.size !== meters.length || meters.some((m) => !rows.has(m.port))) buildMeters(meters);
  for (const m of meters) {
    const r = rows.get(m.port);
    const rms = level(m.rmsDB), peak = level(m.peakDB), hold = level(m.holdDB ?? m.peakDB);
    r.rms.style.transform = `scaleX(${share(rms)})`;
    r.peak.style.transform = `scaleX(${share(peak)})`;
    r.hold.style.left = `${share(hold) * 100}%`;
    r.bar.dataset.level = peak >= -0.1 ? "over" : peak >= -6 ? "hot" : "ok";
    text(r.rmsText, dB(rms));
    text(r.peakText, dB(peak));
    r.clip.hidden = !m.clip;
    r.row.dataset.rms = String(rms);
    r.row.dataset.peak = String(peak);
  }
}

function buildMeters(meters) {
  rows.clear();
  const scale = h("div", { class: "meter-scale", "aria-hidden": "true" },
    [-48, -36, -24, -12, -6, 0].map((d) => h("span", { style: `left:${share(d) * 100}%` }, String(d))));
  const list = meters.map((m) => {
    const r = {
      rms: h("div", { class: "rms" }), peak: h("div", { class: "peak" }), hold: h("div", { class: "hold" }),
      rmsText: h("span", { class: "rms-db" }, "–"), peakText: h("span", { class: "peak-db" }, "–"),
      clip: h("span", { class: "clip", hidden: true }, "CLIP"),
    };
    r.bar = h("div", { class: "bar", "aria-hidden": "true" }, r.peak, r.rms, r.hold);
    r.row = h("div", { class: "meter", dataset: { port: m.port }, role: "group", "aria-label": `Meter ${m.port}` },
      h("span", { class: "port" }, m.port), r.bar,
      h("span", { class: "numbers" }, "RMS ", r.rmsText, " · peak ", r.peakText, " dB ", r.clip));
    rows.set(m.port, r);
    return r.row;
  });
  el.meters.replaceChildren(...list, meters.length ? scale : h("p", { class: "hint" }, "No meters (no recorder, or the server is gone)."));
}

// ---- Loudness: a bar per programme on -60…0 LUFS, with the target as a line.

const loudRows = new Map();
let loudPending = null;
const TARGETS = [["-23", "-23 LUFS (EBU R128)"], ["-16", "-16 LUFS (podcast)"], ["-14", "-14 LUFS (streaming)"],
  ["-24", "-24 LKFS (ATSC A/85)"]];
let target = Number(localStorage.getItem("tandem.loudnessTarget") || "-23");

function loudnessTarget() {
  const select = h("select", { id: "loudness-target", onchange: () => {
    target = Number(select.value);
    localStorage.setItem("tandem.loudnessTarget", select.value);
    for (const r of loudRows.values()) r.target.style.left = `${share(target) * 100}%`;
    queueLoudness(store.loudness);
  } }, TARGETS.map(([v, label]) => h("option", { value: v, selected: Number(v) === target }, label)));
  return h("div", { class: "row" }, h("label", { for: "loudness-target" }, "Target "), select);
}

function queueLoudness(list) {
  if (!list) return;
  if (!loudPending) requestAnimationFrame(drawLoudness);
  loudPending = list;
}

/** A LUFS or dB value, or "–" where the meter has none yet (silence, or too short). */
const lu = (v) => (typeof v === "number" && Number.isFinite(v) ? v.toFixed(1) : "–");

function drawLoudness() {
  const list = loudPending;
  loudPending = null;
  if (!list) return;
  const key = (p) => `${p.engine} ${p.channels.join("+")}`;
  if (loudRows.size !== list.length || list.some((p) => !loudRows.has(key(p)))) buildLoudness(list, key);
  for (const p of list) {
    const r = loudRows.get(key(p));
    const s = typeof p.shortTerm === "number" ? p.shortTerm : -Infinity;
    const m = typeof p.momentary === "number" ? p.momentary : -Infinity;
    r.short.style.transform = `scaleX(${share(s)})`;
    r.moment.style.left = `${share(m) * 100}%`;
    r.bar.dataset.level = s > target + 1 ? "hot" : "ok";
    text(r.m, lu(p.momentary));
    text(r.s, lu(p.shortTerm));
    text(r.i, lu(p.integrated));
    text(r.lra, lu(p.range));
    text(r.tp, lu(p.truePeak));
    r.tp.dataset.over = typeof p.truePeak === "number" && p.truePeak > -1 ? "yes" : "no";
    r.row.dataset.integrated = String(p.integrated ?? "");
  }
}

function buildLoudness(list, key) {
  loudRows.clear();
  const rowsBuilt = list.map((p) => {
    const r = {
      short: h("div", { class: "rms" }), moment: h("div", { class: "hold" }),
      target: h("div", { class: "target", style: `left:${share(target) * 100}%` }),
      m: h("span", { class: "lufs-m" }, "–"), s: h("span", { class: "lufs-s" }, "–"), i: h("span", { class: "lufs-i" }, "–"),
      lra: h("span", { class: "lufs-lra" }, "–"), tp: h("span", { class: "lufs-tp" }, "–"),
    };
    r.bar = h("div", { class: "bar", "aria-hidden": "true" }, r.short, r.moment, r.target);
    const name = `${p.engine} ${p.channels.join("+")}`;
    r.row = h("div", { class: "meter", dataset: { programme: name }, role: "group", "aria-label": `Loudness ${name}` },
      h("span", { class: "port" }, name), r.bar,
      h("span", { class: "numbers" }, "M ", r.m, " · S ", r.s, " · I ", r.i, " LUFS · LRA ", r.lra, " LU · TP ", r.tp, " dBTP"));
    loudRows.set(key(p), r);
    return r.row;
  });
  el.loudness.replaceChildren(...rowsBuilt, list.length ? h("span") : h("p", { class: "hint" },
    "Not measured: [session] loudness = true (or the engines' loudness keys) turns the meters on."));
}

// ---- The log.

const MAX_LOG = 300;
/** The log follows new events unless someone scrolled back to read. */
let follow = true;

function logEvent(e) {
  const time = e.time ? new Date(e.time) : new Date();
  const item = h("li", { dataset: { kind: e.kind }, class: e.kind === "control-changed" ? "ctl-change" : "" },
    h("time", { datetime: time.toISOString() }, time.toLocaleTimeString([], { hour12: false })),
    h("span", { class: "kind" }, e.kind), " ", e.text || "");
  el.log.append(item);
  while (el.log.childElementCount > MAX_LOG) el.log.firstElementChild.remove();
  if (follow) el.log.scrollTop = el.log.scrollHeight;
}

