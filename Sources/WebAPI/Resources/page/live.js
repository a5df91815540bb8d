// What the page knows of the session, and how it stays true: the event stream (a WebSocket) says what changed and
// carries the meters (one message shared by every stream, at the loop's pace; silence is "-inf"). An event with
// fields (a control's new value, a chain's mix and gain, a bypass, a marker) is applied as it is, with no read; one
// without (a kind that only has words) has the affected resource read again. The status is polled for what no event
// covers (elapsed time, positions, counters, DSP load): every 2 s while the page is seen, twice a second while the
// stream is down. A lost stream is opened again with `since=` the last event seen, so the page catches up; `missed`
// (or a server that started anew) means everything is read again.

import { get, socketURL } from "./api.js";

// Meters 20 times a second where they are shown, once a second elsewhere (a heartbeat: a silent stream is a dead
// one), none for a page nobody sees. Each stream costs the server per message, so a page asks no more than it shows.
const METER_RATE = 20;
const HEARTBEAT_RATE = 1;
const STATUS_EVERY = 2000;
const STATUS_EVERY_DOWN = 500;

/** The resources the page reads, each with its route. */
const ROUTES = {
  status: "status",
  plugins: "plugins",
  graph: "graph",
  takes: "takes",
  presets: "presets",
  favourites: "favourites",
  maps: "maps",
  scenes: "scenes",
};

/** The last answer for each resource (null until read), `error` for one that failed, `missing` for a route the
 * server does not have. */
export const store = {
  status: null,
  plugins: null,
  graph: null,
  takes: null,
  presets: null,
  favourites: null,
  maps: null,
  /** `GET /api/scenes`: the scenes, the one recalled last (`current`) and the morph in force, kept up by events. */
  scenes: null,
  meters: [],
  /** Each measured programme's loudness (the status's `loudness`, refreshed by every meters message). */
  loudness: [],
  missing: new Set(),
  /** "connecting" | "live" | "down" */
  stream: "connecting",
  /** The last event's sequence number the page has seen. */
  sequence: 0,
  /** Markers of each take, from `marker-added` events: take number → [{seconds, label, source}]. */
  markers: new Map(),
  /** Meter messages received, and streams opened (a script or a test can see the stream flow). */
  meterMessages: 0,
  connects: 0,
};

// The page's state, for scripts and tests that drive the page (read it; change nothing through it).
window.tandem = { store };

const listeners = new Map();

/** Calls `fn(value)` whenever `topic` changes: a resource name ("scenes" too when an event moves the current one),
 * "meters", "event", "stream", "control", "chain-level", "bypass", "marker". */
export function on(topic, fn) {
  if (!listeners.has(topic)) listeners.set(topic, new Set());
  listeners.get(topic).add(fn);
  return () => listeners.get(topic).delete(fn);
}

export function emit(topic, value) {
  for (const fn of listeners.get(topic) || []) {
    try {
      fn(value);
    } catch (e) {
      console.warn("listener for", topic, "failed:", e);
    }
  }
}

// One read per resource at a time; a request made while one runs reads once more when it ends.
const inFlight = new Map();
const again = new Set();

/** Reads a resource again (coalesced). */
export function refresh(what) {
  if (inFlight.has(what)) {
    again.add(what);
    return inFlight.get(what);
  }
  const p = (async () => {
    try {
      // A route an older server lacks (its 404 says "no GET /api/…") is asked for once: it lacks it until it is
      // started anew (see "hello"). Trying tells; the OpenAPI document (140 KB) is never read for it.
      if (store.missing.has(what)) throw Object.assign(new Error(`no ${what} on this server`), { missingRoute: true });
      store[what] = await get(ROUTES[what]);
      store.missing.delete(what);
      if (what === "status") noteStatus();
    } catch (e) {
      if (e.missingRoute) store.missing.add(what);
      else console.info("reading", what, "failed:", e.message);
      store[what] = store.missing.has(what) ? null : store[what];
    } finally {
      inFlight.delete(what);
    }
    emit(what, store[what]);
    if (again.delete(what)) refresh(what);
  })();
  inFlight.set(what, p);
  return p;
}

/** Reads everything again (after `missed`, a reconnect to a new server process, a server coming back). */
export function refreshAll() {
  return Promise.all(Object.keys(ROUTES).map(refresh));
}

// ---- Controls: a change event names one control; only that one is read again.

const controlReads = new Map();

/** Reads one control's value and text again, at most one read per control at a time. */
export function refreshControl(engine, plugin, symbol) {
  const key = `${engine}/${plugin}/${symbol}`;
  if (controlReads.has(key)) {
    controlReads.set(key, true);
    return;
  }
  controlReads.set(key, false);
  get(["engines", engine, "plugins", plugin, "controls", symbol].map(encodeURIComponent).join("/"))
    .then((c) => emit("control", c))
    .catch(() => refresh("plugins"))
    .finally(() => {
      const more = controlReads.get(key);
      controlReads.delete(key);
      if (more) refreshControl(engine, plugin, symbol);
    });
}

// ---- The event stream.

let socket = null;
let socketRate = 0;
let retry = 0;
let retryTimer = null;
let lastMessage = 0;
let firstHello = true;

let metersShown = true;

function wantedRate() {
  if (document.visibilityState === "hidden") return 0;
  return metersShown ? METER_RATE : HEARTBEAT_RATE;
}

/** Whether the page shows meters now (the stream is opened again at the rate that suits). */
export function showMeters(on) {
  if (metersShown === on) return;
  metersShown = on;
  if (socket && socketRate !== wantedRate()) connect();
}

/** Opens the stream (again), from the last event seen. */
export function connect() {
  clearTimeout(retryTimer);
  retryTimer = null;
  if (socket) {
    socket.onclose = null;
    socket.close();
  }
  socketRate = wantedRate();
  const query = `meters=${socketRate}` + (firstHello ? "&since=0" : `&since=${store.sequence}`);
  let ws;
  try {
    ws = new WebSocket(socketURL(query));
  } catch (e) {
    scheduleReconnect();
    return;
  }
  socket = ws;
  lastMessage = Date.now();
  ws.onmessage = (m) => {
    lastMessage = Date.now();
    let msg;
    try {
      msg = JSON.parse(m.data);
    } catch {
      return;
    }
    handle(msg);
  };
  ws.onclose = () => {
    if (socket === ws) {
      socket = null;
      streamDown();
      scheduleReconnect();
    }
  };
}

function scheduleReconnect() {
  clearTimeout(retryTimer);
  const delay = Math.min(5000, 250 * 2 ** retry) * (0.75 + Math.random() / 2);
  retry = Math.min(retry + 1, 6);
  retryTimer = setTimeout(() => {
    retryTimer = null;
    connect();
  }, delay);
}

// Events up to `historyEnd` came as the first connection's catch-up: history, only logged (the page reads
// everything then anyway). On a reconnection the catch-up is what the page missed, and acted on.
let historyEnd = 0;

function handle(msg) {
  switch (msg.type) {
    case "hello": {
      retry = 0;
      store.connects++;
      const restarted = msg.sequence < store.sequence;
      historyEnd = firstHello ? msg.sequence : 0;
      if (restarted) {
        store.sequence = 0;
        store.missing.clear();
      }
      setStream("live");
      if (firstHello || restarted) refreshAll();
      else refresh("status");
      firstHello = false;
      break;
    }
    case "event":
      if (msg.sequence <= store.sequence) return;
      store.sequence = msg.sequence;
      if (msg.kind === "marker-added") noteMarker(msg);
      emit("event", msg);
      if (msg.sequence > historyEnd) react(msg);
      break;
    case "missed":
      emit("event", { kind: "missed", text: `events after ${msg.after} are gone: reading everything again`, time: new Date().toISOString() });
      refreshAll();
      break;
    case "meters":
      store.meters = msg.meters;
      store.meterMessages++;
      emit("meters", msg.meters);
      store.loudness = msg.loudness || [];
      emit("loudness", store.loudness);
      break;
  }
}

/** A marker of a take (history included: the markers of a take that runs since before the page opened). */
function noteMarker(msg) {
  if (!Number.isFinite(msg.take)) return;
  if (!store.markers.has(msg.take)) store.markers.set(msg.take, []);
  store.markers.get(msg.take).push({ seconds: msg.seconds, label: msg.label || "", source: msg.source || "", time: msg.time });
  // Only the last few takes' markers are kept: the page shows the running take's.
  for (const take of store.markers.keys()) if (store.markers.size > 4) store.markers.delete(take);
  emit("marker", msg);
}

/**
 * The fields `names` of an event: its own (servers since the structured events), else read from its words
 * (an older server, or an event relayed without them), or null when neither has them.
 */
function fields(msg, names) {
  if (names.every((n) => n in msg)) return msg;
  const words = String(msg.text || "").split(" ");
  if (words.length < names.length) return null;
  return Object.fromEntries(names.map((n, i) => [n, words[i]]));
}

/** What an event changes: applied from its fields, or read again. Unknown kinds read the status. */
function react(msg) {
  const kind = msg.kind;
  switch (kind) {
    case "control-changed": {
      const f = fields(msg, ["engine", "plugin", "symbol", "value"]);
      if (!f) return refresh("plugins");
      const value = Number(f.value);
      if ("value" in msg && Number.isFinite(value)) emit("control", { engine: f.engine, plugin: f.plugin, symbol: f.symbol, value });
      else refreshControl(f.engine, f.plugin, f.symbol);
      return;
    }
    case "chain-level-changed": {
      if (!("engine" in msg) || !Number.isFinite(msg.mix) || !Number.isFinite(msg.gainDB)) return refresh("status");
      const chain = store.status?.plugins?.[msg.engine];
      if (chain) Object.assign(chain, { mix: msg.mix, gainDB: msg.gainDB });
      emit("chain-level", { engine: msg.engine, mix: msg.mix, gainDB: msg.gainDB, source: msg.source });
      return;
    }
    case "bypass-changed": {
      if (!("engine" in msg) || !("bypassed" in msg)) break;
      const p = (store.plugins || []).find((x) => x.engine === msg.engine && x.name === msg.plugin);
      if (p) p.bypassed = !!msg.bypassed;
      emit("bypass", { engine: msg.engine, plugin: msg.plugin, bypassed: !!msg.bypassed });
      return;
    }
    case "marker-added":
      return;
    case "favourites-changed":
      refresh("favourites");
      return;
    case "connected":
    case "disconnected":
    case "manual-disconnect":
      refresh("graph");
      return;
    case "take-started":
    case "chunk-started":
    case "disk-error":
    case "item-started":
    case "item-failed":
    case "server-lost":
      refresh("status");
      return;
    case "take-finished":
      refresh("status");
      refresh("takes");
      return;
    case "server-back":
    case "rack-back":
      refreshAll();
      return;
    case "rack-down":
      refresh("status");
      refresh("plugins");
      return;
    case "map-added":
    case "map-failed":
      refresh("maps");
      return;
    case "scene-recalled":
      // Whoever recalled it (MIDI, OSC, a schedule, another page): its button is lit.
      if (!store.scenes || typeof msg.scene !== "string") return refresh("scenes");
      store.scenes.current = msg.scene;
      delete store.scenes.morph;
      // How much later an isolated rack's process had its values, and what the rig could not take.
      if (typeof msg.lagMS === "number") store.scenes.lastLagMS = msg.lagMS; else delete store.scenes.lastLagMS;
      store.scenes.missing = Array.isArray(msg.missing) ? msg.missing.length : 0;
      emit("scenes", store.scenes);
      return;
    case "scene-morphed": {
      const x = Number(msg.position);
      if (!store.scenes || typeof msg.from !== "string" || typeof msg.to !== "string" || !Number.isFinite(x)) return refresh("scenes");
      store.scenes.morph = { from: msg.from, to: msg.to, position: x };
      if (x === 0 || x === 1) store.scenes.current = x === 0 ? msg.from : msg.to;
      else delete store.scenes.current;
      emit("scenes", store.scenes);
      return;
    }
    case "scenes-changed":
      refresh("scenes");
      return;
  }
  switch (kind) {
    case "bypass-changed":
    case "preset-loaded":
    case "plugin-bypassed":
    case "plugin-ignored":
    case "chain-edited":
      refresh("plugins");
      refresh("status");
      return;
    default:
      if (/preset/.test(kind)) refreshAll();
      else if (/favourite/.test(kind)) refresh("favourites");
      else refresh("status");
  }
}

function setStream(state) {
  if (store.stream === state) return;
  store.stream = state;
  emit("stream", state);
}

function streamDown() {
  setStream("down");
}

// ---- Status polling, the watchdog, sleep and wake.

let lastServerLost = null;

function noteStatus() {
  const lost = !!store.status?.serverLost;
  if (lastServerLost === true && !lost) refreshAll();
  lastServerLost = lost;
}

let pollTimer = null;

function poll() {
  clearTimeout(pollTimer);
  const hidden = document.visibilityState === "hidden";
  if (!hidden || store.stream !== "live") refresh("status");
  // A stream that sends meters and fell silent is dead (a phone that slept, a network that went away quietly):
  // dropped at once, since closing a dead connection politely can take a minute.
  if (socket && socketRate > 0 && Date.now() - lastMessage > 4000) {
    socket.onclose = null;
    socket.close();
    socket = null;
    streamDown();
  }
  if (!socket && !retryTimer) scheduleReconnect();
  pollTimer = setTimeout(poll, store.stream === "live" ? (hidden ? 10000 : STATUS_EVERY) : STATUS_EVERY_DOWN);
}

/** Starts the page's life: the stream, the polls, and the handlers for sleep, wake and the network. */
export function start() {
  connect();
  poll();
  document.addEventListener("visibilitychange", () => {
    // Meters only for a page someone sees; a page seen again catches up at once.
    if (!socket || socketRate !== wantedRate()) connect();
    if (document.visibilityState === "visible") poll();
  });
  window.addEventListener("online", () => {
    retry = 0;
    connect();
    poll();
  });
  window.addEventListener("pageshow", (e) => {
    if (e.persisted) {
      connect();
      refreshAll();
    }
  });
}
