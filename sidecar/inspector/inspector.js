// Credence live inspector: plain JavaScript, no build step. It connects to the sidecar that
// served this page (same host and port) with JSON text frames, a reader (or writer) token typed
// in or given as ?token=, subscribes to every resident and replays the world's history
// (hello.resume 0) to learn its residents. URL parameters: world, token, resident, root.
"use strict";
(() => {
  const $ = (sel) => document.querySelector(sel);
  const params = new URLSearchParams(location.search);
  const PAGED = {
    beliefs: ["beliefs"], explanation: ["evidence", "history"], distribution: ["residents"],
    narrative: ["sections"], graph: ["nodes", "edges"], trust: ["entries"],
  };
  const STREAM_MAX = 300;

  let ws = null;
  let nextRid = 1;
  const pending = new Map();
  const residents = new Set();
  let selected = params.get("resident") || "";
  let selectedRoot = params.get("root") || "";
  let refreshTimer = null;

  // Build DOM nodes; text always goes through textContent (never parsed as HTML).
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k === "style") Object.assign(node.style, v);
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c ?? "")));
    return node;
  }
  const svg = (tag, attrs, text) => {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const show = (v) => (typeof v === "string" ? v : JSON.stringify(v));
  const chip = (state) => el("span", { class: `chip ${state}` }, state);
  function bar(confidence, state) {
    return el("span", {}, el("span", { class: "bar" },
      el("span", { class: state || "influencing", style: { width: `${confidence}%` } })), el("b", {}, confidence));
  }
  const byCodePoint = (a, b) => {
    const x = [...a], y = [...b];
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      const d = x[i].codePointAt(0) - y[i].codePointAt(0);
      if (d) return d;
    }
    return x.length - y.length;
  };

  function setStatus(text, kind) {
    const s = $("#status");
    s.textContent = text;
    s.className = `status ${kind}`;
  }

  // ---------------------------------------------------------------- the connection

  function connect(world, token) {
    if (ws) ws.close();
    pending.clear();
    residents.clear();
    $("#stream").replaceChildren();
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}/`);
    ws = socket;
    setStatus("connecting…", "wait");
    socket.onopen = () => {
      const hello = { type: "hello", protocol: 1, world, client: "credence-inspector", subscribe: "*", resume: 0 };
      if (token) hello.token = token;
      socket.send(JSON.stringify(hello));
    };
    socket.onmessage = (ev) => handle(JSON.parse(ev.data));
    socket.onclose = (ev) => {
      if (ws !== socket) return;
      setStatus(`closed ${ev.code}${ev.reason ? " " + ev.reason : ""}`, "off");
      for (const p of pending.values()) p.reject(new Error("connection closed"));
      pending.clear();
    };
  }

  function request(frame) {
    const rid = `i${nextRid++}`;
    return new Promise((resolve, reject) => {
      pending.set(rid, { resolve, reject, parts: [] });
      ws.send(JSON.stringify({ ...frame, rid }));
    });
  }

  function handle(frame) {
    switch (frame.type) {
      case "welcome":
        setStatus(`connected · ${frame.world} · ${frame.role} · seq ${frame.seq}`, "on");
        document.body.dataset.connected = "true";
        if (selected) selectResident(selected);
        return;
      case "belief":
        onBelief(frame);
        return;
      case "resumed":
        document.body.dataset.resumed = String(frame.seq);
        return;
    }
    const p = frame.rid === undefined ? undefined : pending.get(frame.rid);
    if (!p) {
      if (frame.type === "error") setStatus(`${frame.code}: ${frame.message}`, "off");
      return;
    }
    if (frame.type === "error") {
      pending.delete(frame.rid);
      p.reject(Object.assign(new Error(frame.message), { code: frame.code }));
      return;
    }
    p.parts.push(frame);
    if (frame.more) return;
    pending.delete(frame.rid);
    const joined = { ...frame };
    for (const key of PAGED[frame.type] || []) joined[key] = p.parts.flatMap((part) => part[key] || []);
    p.resolve(joined);
  }

  // ---------------------------------------------------------------- live notifications

  function onBelief(b) {
    addResident(b.resident);
    if (b.source_kind === "hearsay" && b.source) addResident(b.source);
    const prev = b.prev_confidence === null ? "—" : b.prev_confidence;
    const item = el("li", { class: "fresh", "data-seq": b.seq },
      el("span", { class: "muted" }, `#${b.seq} day ${b.day} `),
      el("b", {}, b.resident), " ", b.root, " = ", show(b.value), " ",
      el("i", {}, b.change), ` ${prev} → ${b.confidence} `, chip(b.state));
    const stream = $("#stream");
    stream.prepend(item);
    while (stream.children.length > STREAM_MAX) stream.lastChild.remove();
    if (b.resident === selected) scheduleRefresh();
  }

  function addResident(name) {
    if (!name || residents.has(name) || name.startsWith("\u0000")) return;
    residents.add(name);
    const list = $("#residents");
    const items = [...residents].sort(byCodePoint);
    list.replaceChildren(...items.map((r) =>
      el("li", { class: r === selected ? "selected" : "", "data-resident": r, onclick: () => selectResident(r) }, r)));
  }

  function scheduleRefresh() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(() => {
      refreshBeliefs();
      if (selectedRoot) selectBelief(selectedRoot);
    }, 150);
  }

  // ---------------------------------------------------------------- panels

  function selectResident(name) {
    selected = name;
    $("#resident-name").textContent = name;
    for (const li of $("#residents").children) li.classList.toggle("selected", li.dataset.resident === name);
    refreshBeliefs();
    refreshTrust();
    if (selectedRoot) selectBelief(selectedRoot);
  }

  async function refreshBeliefs() {
    const tbody = $("#beliefs tbody");
    try {
      const reply = await request({ type: "beliefs", resident: selected });
      tbody.replaceChildren(...reply.beliefs.map((b) => el("tr", {
        class: b.root === selectedRoot ? "selected" : "", "data-root": b.root, onclick: () => selectBelief(b.root),
      },
      el("td", {}, b.root), el("td", {}, show(b.value)), el("td", {}, bar(b.confidence, b.state)),
      el("td", {}, chip(b.state)),
      el("td", {}, b.source_kind + (b.source ? ` · ${b.source}` : "") + (b.intervention ? ` · ${b.intervention}` : "")),
      el("td", {}, b.subject))));
    } catch (err) {
      tbody.replaceChildren(el("tr", {}, el("td", { colspan: 6, class: "muted" }, err.message)));
    }
  }

  async function refreshTrust() {
    const tbody = $("#trust tbody");
    try {
      const reply = await request({ type: "trust", resident: selected });
      const rows = reply.entries.map((e) => el("tr", {}, el("td", {}, e.source), el("td", {}, e.topic ?? "general"),
        el("td", {}, e.value.toFixed(2)), el("td", {}, e.history.map((h) => h.detail).join(", "))));
      rows.push(el("tr", {}, el("td", { class: "muted" }, "anyone else"), el("td", {}, ""),
        el("td", {}, reply.default.toFixed(2)), el("td", {}, "")));
      tbody.replaceChildren(...rows);
    } catch (err) {
      tbody.replaceChildren(el("tr", {}, el("td", { colspan: 4, class: "muted" }, err.message)));
    }
  }

  async function selectBelief(root) {
    selectedRoot = root;
    $("#belief-name").textContent = `${selected} · ${root}`;
    for (const tr of $("#beliefs tbody").children) tr.classList.toggle("selected", tr.dataset.root === root);
    const [explanation, distribution, graph] = await Promise.allSettled([
      request({ type: "explain", resident: selected, root }),
      request({ type: "distribution", root }),
      request({ type: "graph", resident: selected, root }),
    ]);
    renderTimeline(explanation);
    renderDistribution(distribution);
    renderGraph(graph);
  }

  function renderTimeline(result) {
    const list = $("#timeline");
    if (result.status !== "fulfilled") return list.replaceChildren(el("li", { class: "muted" }, result.reason.message));
    const x = result.value;
    const evidence = new Map(x.evidence.map((e) => [e.evidence_id, e]));
    list.replaceChildren(...x.history.map((h) => {
      const e = evidence.get(h.evidence_id);
      const from = h.prev_confidence === null ? "" : `${h.prev_confidence} → `;
      const valueChange = h.prev_value !== null && show(h.prev_value) !== show(h.value) ? ` (${show(h.prev_value)} → ${show(h.value)})` : "";
      return el("li", { "data-change": h.change },
        el("span", { class: "day" }, `day ${h.day}`), el("b", {}, h.change), ` ${from}${h.confidence} `, chip(h.state),
        ` ${show(h.value)}${valueChange}`,
        e ? el("div", { class: "ev" }, `${e.event_kind} ${e.event_id} · ${e.source_kind}${e.source ? " from " + e.source : ""}` +
          ` · ${e.relation}${e.hops && e.hops.length ? " · via " + e.hops.join(" → ") : ""}` +
          `${e.trust !== null && e.trust !== undefined ? " · trust " + e.trust : ""}: ${e.subject}`) :
          el("div", { class: "ev" }, h.detail ? `detail ${h.detail}` : "aging"));
    }));
  }

  function renderDistribution(result) {
    const box = $("#distribution");
    if (result.status !== "fulfilled") return box.replaceChildren(el("p", { class: "muted" }, result.reason.message));
    const d = result.value;
    const total = d.residents.length || 1;
    const rows = d.values.map((v) => el("div", { class: "dist-row" },
      el("span", { class: "label" }, show(v.value)),
      el("span", { class: "bar" }, el("span", { class: "influencing", style: { width: `${(100 * v.residents) / total}%` } })),
      el("span", {}, `${v.residents} · mean ${v.mean_confidence} · ${v.independent_origins} origin(s)`)));
    if (d.observed_value !== undefined) {
      rows.push(el("p", { class: "muted" }, `the world observed ${show(d.observed_value)}; false share ${d.false_share}`));
    }
    rows.push(el("p", { class: "muted" }, d.residents.map((r) => `${r.resident}: ${show(r.value)} (${r.confidence})`).join(" · ")));
    box.replaceChildren(...rows);
  }

  const EDGE_COLOURS = {
    supports: "#2e7d32", contradicts: "#c62828", heard_from: "#1565c0", witnessed: "#999",
    corrected_by: "#8e24aa", inferred_from: "#333", about: "#bbb",
  };
  const STATE_COLOURS = {
    influencing: "#2e7d32", doubtful: "#e6a100", anomalous: "#8e24aa", corrected: "#1565c0", past: "#8a8a8a",
  };
  const COLUMN = { event: 0, claim: 1, person: 2, place: 2 };

  function renderGraph(result) {
    const box = $("#graph");
    if (result.status !== "fulfilled") return box.replaceChildren(el("p", { class: "muted" }, result.reason.message));
    const { nodes, edges } = result.value;
    const columns = [[], [], []];
    for (const n of nodes) columns[COLUMN[n.type] ?? 2].push(n);
    const width = 900, rowHeight = 46, colX = [150, 450, 750];
    const height = Math.max(120, rowHeight * Math.max(...columns.map((c) => c.length)) + 40);
    const at = new Map();
    columns.forEach((col, ci) => col.forEach((n, i) => at.set(n.id, [colX[ci], 30 + i * rowHeight + (height - 40 - col.length * rowHeight) / 2])));
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img" });
    const defs = svg("defs");
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#777" }));
    defs.append(marker);
    root.append(defs);
    for (const e of edges) {
      const a = at.get(e.source), b = at.get(e.target);
      if (!a || !b) continue;
      const colour = EDGE_COLOURS[e.type] || "#777";
      // From border to border of the two boxes (240 × 30), so the arrow head shows.
      const dx = b[0] - a[0], dy = b[1] - a[1];
      const cut = Math.min(dx ? 121 / Math.abs(dx) : Infinity, dy ? 16 / Math.abs(dy) : Infinity, 0.5);
      root.append(svg("line", {
        x1: a[0] + dx * cut, y1: a[1] + dy * cut, x2: b[0] - dx * cut, y2: b[1] - dy * cut,
        stroke: colour, "stroke-width": 1.6, "marker-end": "url(#arrow)",
      }));
      root.append(svg("text", { x: (a[0] + b[0]) / 2, y: (a[1] + b[1]) / 2 - 4, fill: colour, "text-anchor": "middle" }, e.type));
    }
    for (const n of nodes) {
      const [x, y] = at.get(n.id);
      const fill = n.type === "claim" ? STATE_COLOURS[n.state] || "#2e7d32" : n.type === "event" ? "#f0ede4" : "#e6eef8";
      root.append(svg("rect", { x: x - 120, y: y - 15, width: 240, height: 30, rx: 6, fill, stroke: "#999", "data-node": n.id }));
      const label = n.type === "claim" ? `${n.resident}: ${show(n.value)} (${n.confidence})` : n.label;
      root.append(svg("text", { x, y: y + 4, "text-anchor": "middle", fill: n.type === "claim" ? "#fff" : "#222" },
        label.length > 40 ? label.slice(0, 39) + "…" : label));
    }
    box.replaceChildren(root);
  }

  // ---------------------------------------------------------------- wiring

  $("#world").value = params.get("world") || "";
  $("#token").value = params.get("token") || "";
  $("#resident-input").value = selected;
  $("#connect").addEventListener("submit", (ev) => {
    ev.preventDefault();
    connect($("#world").value.trim(), $("#token").value);
  });
  $("#pick").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const name = $("#resident-input").value.trim();
    if (name && ws) selectResident(name);
  });
  if (params.get("world")) connect(params.get("world"), params.get("token") || "");
})();
