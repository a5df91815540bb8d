// The JACK graph: every client's ports, outputs on the left and inputs on the right, with their connections as
// wires. Choose a port, then one of the other side: they are connected, or disconnected when they were. Works the
// same by pointer, touch and keyboard (ports are buttons); the list below the patchbay disconnects too.

import { post } from "./api.js";
import { h, card, fill, text } from "./dom.js";
import { store, on, emit, refresh } from "./live.js";

let bay, outputs, inputs, wires, connections, hint, filter;
let selected = null;
let timer = null;
const buttons = new Map();

export function mount(root) {
  outputs = h("div", { class: "column", role: "group", "aria-labelledby": "graph-out" }, h("h3", { id: "graph-out" }, "Outputs"));
  inputs = h("div", { class: "column", role: "group", "aria-labelledby": "graph-in" }, h("h3", { id: "graph-in" }, "Inputs"));
  wires = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  wires.setAttribute("class", "wires");
  wires.setAttribute("aria-hidden", "true");
  bay = h("div", { class: "patchbay" }, outputs, wires, inputs);
  hint = h("p", { class: "hint", role: "status", "aria-live": "polite" }, "Choose an output, then an input, to connect or disconnect them.");
  filter = h("select", { id: "graph-type", onchange: () => draw(store.graph) },
    h("option", { value: "" }, "Audio and MIDI"), h("option", { value: "audio" }, "Audio"), h("option", { value: "midi" }, "MIDI"));
  connections = h("ul", { class: "connections", "aria-label": "Connections" });
  root.append(
    card("Graph", h("div", { class: "row" }, h("label", { for: "graph-type" }, "Show"), filter,
      h("button", { type: "button", onclick: () => refresh("graph") }, "Read again")), hint, bay),
    card("Connections", connections));
  on("graph", draw);
  new ResizeObserver(() => drawWires()).observe(bay);
  root.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && selected) choose(null);
  });
}

export function shown(on) {
  clearInterval(timer);
  // Other programs add and remove ports without an event: read the graph every 3 s while it is seen.
  if (on) {
    refresh("graph");
    timer = setInterval(() => document.visibilityState === "visible" && refresh("graph"), 3000);
  }
}

function ports() {
  const type = filter.value;
  return (store.graph || []).filter((p) => !type || p.type === type);
}

function draw(graph) {
  if (!graph) {
    if (store.missing.has("graph")) fill(connections, h("li", { class: "hint" }, "This server does not show the graph."));
    return;
  }
  if (selected && !graph.some((p) => p.name === selected)) selected = null;
  buttons.clear();
  const list = ports();
  const side = (direction) => {
    const clients = new Map();
    for (const p of list.filter((p) => p.direction === direction)) {
      if (!clients.has(p.client)) clients.set(p.client, []);
      clients.get(p.client).push(p);
    }
    return [...clients].map(([client, ps]) => h("div", { class: "client" }, h("h4", {}, client),
      ps.map((p) => {
        const b = h("button", { type: "button", class: "port", dataset: { port: p.name, type: p.type, direction },
          onclick: () => press(p) }, p.name.slice(client.length + 1));
        buttons.set(p.name, { button: b, port: p });
        return b;
      })));
  };
  fill(outputs, h("h3", { id: "graph-out" }, "Outputs"), side("output"));
  fill(inputs, h("h3", { id: "graph-in" }, "Inputs"), side("input"));
  const pairs = [];
  for (const p of list) if (p.direction === "output") for (const to of p.connections) pairs.push([p.name, to]);
  fill(connections, pairs.length ? pairs.map(([a, b]) => h("li", { dataset: { from: a, to: b } },
    h("span", {}, a, " → ", b),
    h("button", { type: "button", "aria-label": `Disconnect ${a} from ${b}`, onclick: () => change(a, b, false) }, "Disconnect")))
    : h("li", { class: "hint" }, "No connections."));
  showSelection();
  drawWires();
}

function press(p) {
  if (!selected || selected === p.name) return choose(selected === p.name ? null : p.name);
  const first = buttons.get(selected)?.port;
  if (!first || first.direction === p.direction) return choose(p.name);
  if (first.type !== p.type) {
    text(hint, `${first.name} carries ${first.type} and ${p.name} ${p.type}: they cannot be connected.`);
    return;
  }
  const [from, to] = first.direction === "output" ? [first.name, p.name] : [p.name, first.name];
  const connected = (store.graph.find((x) => x.name === from)?.connections || []).includes(to);
  change(from, to, !connected);
}

function choose(name) {
  selected = name;
  showSelection();
  if (name) {
    const p = buttons.get(name).port;
    text(hint, `${name} chosen: now choose ${p.direction === "output" ? "an input" : "an output"} to connect or disconnect (Escape: none).`);
  } else {
    text(hint, "Choose an output, then an input, to connect or disconnect them.");
  }
}

function showSelection() {
  const chosen = selected && buttons.get(selected)?.port;
  for (const { button, port } of buttons.values()) {
    const isChosen = port.name === selected;
    const linked = chosen && chosen.direction !== port.direction && port.connections.includes(chosen.name);
    const candidate = chosen && chosen.direction !== port.direction && chosen.type === port.type;
    button.setAttribute("aria-pressed", String(isChosen));
    button.classList.toggle("linked", !!linked);
    button.classList.toggle("candidate", !!candidate);
    const state = port.connections.length ? `connected to ${port.connections.join(", ")}` : "not connected";
    button.setAttribute("aria-label", `${port.name}, ${port.type} ${port.direction}, ${state}`
      + (candidate ? `; press to ${linked ? "disconnect from" : "connect to"} ${chosen.name}` : ""));
  }
  drawWires();
}

async function change(from, to, connect) {
  try {
    await post(connect ? "graph/connect" : "graph/disconnect", { from, to });
    text(hint, `${connect ? "Connected" : "Disconnected"} ${from} → ${to}.`);
  } catch (e) {
    emit("problem", e.message);
    text(hint, e.message);
  }
  await refresh("graph");
}

/** The wires, from each output's right edge to its input's left edge. */
function drawWires() {
  if (!bay || bay.offsetParent === null) return;
  const base = bay.getBoundingClientRect();
  wires.setAttribute("viewBox", `0 0 ${base.width} ${base.height}`);
  wires.setAttribute("width", base.width);
  wires.setAttribute("height", base.height);
  const paths = [];
  for (const { button, port } of buttons.values()) {
    if (port.direction !== "output") continue;
    const a = button.getBoundingClientRect();
    for (const to of port.connections) {
      const target = buttons.get(to);
      if (!target) continue;
      const b = target.button.getBoundingClientRect();
      const x1 = a.right - base.left, y1 = a.top + a.height / 2 - base.top;
      const x2 = b.left - base.left, y2 = b.top + b.height / 2 - base.top;
      const bend = Math.max(20, (x2 - x1) / 2);
      const hot = selected === port.name || selected === to;
      paths.push(`<path class="${port.type}${hot ? " hot" : ""}" d="M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}"/>`);
    }
  }
  wires.innerHTML = paths.join("");
}
