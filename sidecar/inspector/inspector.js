// Credence inspector: plain JavaScript, no build step. It connects to the sidecar that served
// this page (same host and port) with JSON text frames and speaks the ordinary wire protocol
// (protocol/SPEC.md). It asks only for what it shows: the `worlds` list (the picker, and to
// tell a typo from a world), a page of `residents` (with their registered names), the
// selected resident's `beliefs` a page at a time (next page on demand), its `narrative`, one
// page of its `trust` (previous/next page), the latest page of `events`, a selected belief's
// latest evidence and changes (`explain` with a `limit`), its `distribution` and one page of
// its `graph` (previous/next page), and
// subscribes to live notifications from the current seq (never a replay of the history).
// The connection is read-only (`hello.role: "reader"`) unless a writer token is given.
// URL parameters: world, token, writer, resident, root, tab.
"use strict";
(() => {
  const $ = (sel) => document.querySelector(sel);
  const params = new URLSearchParams(location.search);
  const PAGED = {
    beliefs: ["beliefs"], explanation: ["evidence", "history"], distribution: ["residents"],
    narrative: ["sections"], graph: ["nodes", "edges"], trust: ["entries"], residents: ["residents"],
    events: ["events"], worlds: ["worlds"],
  };
  const STREAM_MAX = 300;
  const EVENTS_PAGE = 50;
  const RESIDENTS_PAGE = 500;
  const RESIDENTS_SHOWN = 5000; // beyond that, "more residents…" pages on demand
  const PROBE_WORLD = "~inspector-probe"; // a hello needs a world; this one only lists worlds
  const GRAPH_NODES_MAX = 160;
  const GRAPH_PAGE = 60; // event nodes of one graph page (SPEC §10.5): with their people, ~120 boxes
  const TRUST_PAGE = 100; // entries of one trust page (SPEC §10.6)
  const WORLDS_PAGE = 500; // worlds in the picker (SPEC §10.7 limit): a sidecar may hold 10,000
  const BELIEFS_PAGE = 400; // beliefs asked for at a time (SPEC §10.1 limit/after); "next" asks for more
  const BELIEFS_MAX = 9999; // a live refresh asks again for those shown, at most this many (limit ≤ 10,000)
  const EXPLAIN_LATEST = 200; // the latest evidence and changes of a belief the timeline shows (SPEC §10.2)
  const REFRESH_MS = 1000; // a resident that keeps changing is asked again at most this often
  const DISTRIBUTION_MS = 10000; // ... and the distribution of her selected belief at most this often

  let ws = null;
  let nextRid = 1;
  const pending = new Map();
  const state = {
    world: "", role: "reader", seq: 0, day: 0, exists: false,
    residents: new Map(), // id -> names ({} when none registered)
    residentsNext: null, selected: params.get("resident") || "", root: params.get("root") || "",
    // The selected resident's beliefs loaded so far (root order), whether there are more, and
    // the number of the latest beliefs request (an older reply is dropped).
    beliefs: [], beliefsMore: false, beliefsAsked: 0, stream: [], fresh: 0, held: [], heldCount: 0, paused: false, unseen: 0,
    events: [], eventsLast: 0, eventsOldest: null, tab: params.get("tab") || "narrative",
    // The graph page shown: its belief, its cursor (null: the first page) and the cursors of
    // the pages before it (for "previous page"); a live refresh reloads the same page.
    graph: { key: "", after: null, before: [] },
    trust: { resident: "", after: null, before: [] }, // the trust page shown (SPEC §10.6)
    distribution: { root: "", at: 0 }, // the root whose distribution is shown, and when asked
  };
  const timers = {};

  // ------------------------------------------------------------------ small helpers

  // Build DOM nodes; text always goes through textContent (never parsed as HTML).
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k === "style") Object.assign(node.style, v);
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (v !== undefined && v !== null) node.setAttribute(k, v);
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
  const chip = (s) => el("span", { class: `chip ${s}` }, s);
  function bar(confidence, s) {
    return el("span", {}, el("span", { class: "bar" },
      el("span", { class: s || "influencing", style: { width: `${confidence}%` } })), el("b", {}, confidence));
  }
  // The sidecar's order (SPEC §10.1: by code point; JavaScript's < compares UTF-16 units).
  const byCodePoint = (a, b) => {
    const x = [...a], y = [...b];
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      const d = x[i].codePointAt(0) - y[i].codePointAt(0);
      if (d) return d;
    }
    return x.length - y.length;
  };
  const debounce = (key, ms, fn) => { clearTimeout(timers[key]); timers[key] = setTimeout(fn, ms); };
  // At most once per `ms`, `ms` after the first call: unlike a debounce, a stream of calls
  // closer together than `ms` (a busy resident) still runs `fn` every `ms`.
  const throttle = (key, ms, fn) => {
    if (timers[key] === undefined) timers[key] = setTimeout(() => { timers[key] = undefined; fn(); }, ms);
  };

  // A game day as a person reads it: "day 25", or "day 25 07:25" for a fraction of a day.
  function dayText(day) {
    if (typeof day !== "number" || !isFinite(day)) return "day —";
    let whole = Math.floor(day);
    let minutes = Math.round((day - whole) * 1440);
    if (minutes >= 1440) { whole += 1; minutes = 0; }
    if (!minutes) return `day ${whole}`;
    const hh = String(Math.floor(minutes / 60)).padStart(2, "0"), mm = String(minutes % 60).padStart(2, "0");
    return `day ${whole} ${hh}:${mm}`;
  }
  // A resident's registered name in the page's language (else English, else its id).
  function nameOf(id) {
    if (id === null || id === undefined) return "";
    const names = state.residents.get(id) || {};
    return names[$("#lang").value] || names.en || id;
  }
  const list = (text) => text.split(",").map((s) => s.trim()).filter(Boolean);

  function setStatus(text, kind) {
    const s = $("#status");
    s.textContent = text;
    s.className = `status ${kind}`;
  }
  function setLive() {
    $("#live").textContent = `seq ${state.seq} · ${dayText(state.day)}`;
    document.body.dataset.seq = String(state.seq);
  }
  function notice(...children) {
    const box = $("#notice");
    box.hidden = children.length === 0;
    box.replaceChildren(...children);
  }

  // ------------------------------------------------------------------ the connection

  function connect(world, token, writer) {
    if (ws) { const old = ws; ws = null; old.close(); }
    clearInterval(timers.poll);
    for (const p of pending.values()) p.reject(new Error("reconnecting"));
    pending.clear();
    Object.assign(state, { world, exists: false, seq: 0, day: 0, residentsNext: null, beliefs: [], received: 0,
      stream: [], fresh: 0, held: [], heldCount: 0, events: [], eventsOldest: null, unseen: 0 });
    state.residents = new Map();
    document.body.dataset.connected = "false";
    delete document.body.dataset.ready;
    renderResidents(); renderStream(); notice();
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    state.connectedAt = performance.now();
    const socket = new WebSocket(`${scheme}://${location.host}/`);
    ws = socket;
    setStatus("connecting…", "wait");
    socket.onopen = () => {
      const hello = {
        type: "hello", protocol: 1, world: world || PROBE_WORLD, client: "credence-inspector",
        role: writer ? "writer" : "reader",
      };
      if (world) hello.subscribe = "*"; // live from now on: no resume, no replay of the history
      if (writer || token) hello.token = writer || token;
      socket.send(JSON.stringify(hello));
    };
    socket.onmessage = (ev) => {
      if (ws !== socket) return;
      // What this connection received, in characters of JSON: what opening and following a
      // resident costs (tests/test_server_inspector.py prints it).
      state.received += ev.data.length;
      document.body.dataset.received = String(state.received);
      handle(JSON.parse(ev.data));
    };
    socket.onclose = (ev) => {
      if (ws !== socket) return;
      document.body.dataset.connected = "false";
      if ($("#status").className !== "status off") setStatus(`closed ${ev.code}${ev.reason ? " " + ev.reason : ""}`, "off");
      if (!state.world) notice(el("span", {}, "Type a world id (and its token) above and press Open."));
      for (const p of pending.values()) p.reject(new Error("connection closed"));
      pending.clear();
    };
  }

  function request(frame) {
    const rid = `i${nextRid++}`;
    return new Promise((resolve, reject) => {
      if (!ws || ws.readyState !== WebSocket.OPEN) return reject(new Error("not connected"));
      pending.set(rid, { resolve, reject, parts: [] });
      ws.send(JSON.stringify({ ...frame, rid }));
    });
  }

  function handle(frame) {
    switch (frame.type) {
      case "welcome": return onWelcome(frame);
      case "belief": return onBelief(frame);
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
    if (frame.type === "narrative") joined.text = p.parts.map((part) => part.text || "").join(""); // SPEC §11
    p.resolve(joined);
  }

  async function onWelcome(w) {
    state.role = w.role;
    state.seq = w.seq;
    setLive();
    document.body.dataset.role = w.role;
    $("#fork-tools").hidden = w.role !== "writer";
    let worlds = [];
    let more = false;
    try {
      const page = await request({ type: "worlds", limit: WORLDS_PAGE });
      worlds = page.worlds;
      more = page.next !== null && page.next !== undefined;
      // The world asked for may lie past the picker's page: page on to it (by id order).
      let after = page.next;
      while (state.world && after && !worlds.some((x) => x.world === state.world) && after < state.world) {
        const next = await request({ type: "worlds", after, limit: 1000 });
        const found = next.worlds.find((x) => x.world === state.world);
        if (found) worlds = worlds.concat([found]);
        after = next.next;
      }
    } catch (err) {
      setStatus(`worlds: ${err.message}`, "off");
    }
    fillPicker(worlds, more);
    if (!state.world) {
      setStatus("pick a world", "wait");
      notice(el("span", {}, worlds.length ? "Pick a world above." : "This sidecar has no worlds yet."));
      return;
    }
    const info = worlds.find((x) => x.world === state.world);
    if (!info) return missingWorld(worlds);
    openWorld(info);
  }

  function missingWorld(worlds) {
    state.exists = false;
    document.body.dataset.missing = "true";
    setStatus(`no world '${state.world}'`, "off");
    const others = worlds.slice(0, 20).map((x) => el("button", { type: "button", onclick: () => go(x.world) }, x.world));
    notice(el("b", {}, `World '${state.world}' does not exist`),
      ` on this sidecar (no event has been sent to it). `,
      others.length ? el("span", {}, "Open one of: ", ...others) : "This sidecar has no worlds yet.",
      el("span", { class: "muted" }, " This page shows the world once its first event arrives."));
  }

  async function openWorld(info) {
    state.exists = true;
    delete document.body.dataset.missing;
    notice();
    state.day = Math.max(state.day, info.day);
    state.eventsLast = info.events;
    setLive();
    setStatus(`connected · ${state.world} · ${state.role}${state.role === "reader" ? " (read-only)" : ""}`, "on");
    document.body.dataset.connected = "true";
    await loadResidents();
    if (!state.selected && state.residents.size) state.selected = [...state.residents.keys()][0];
    const work = [loadEvents()];
    if (state.selected) work.push(selectResident(state.selected));
    await Promise.allSettled(work);
    // How long the page took to show the world: since navigation, and since it connected.
    document.body.dataset.readyMs = String(Math.round(performance.now()));
    // Events that change no belief (registrations, ticks, refused-nothing acts) send no
    // notification: the log is also polled, a cheap primary-key range from the newest seq.
    clearInterval(timers.poll);
    timers.poll = setInterval(() => { if (!document.hidden && state.exists) loadNewEvents().catch(() => {}); }, 3000);
    document.body.dataset.openMs = String(Math.round(performance.now() - state.connectedAt));
    document.body.dataset.ready = "true";
  }

  function fillPicker(worlds, more = false) {
    const pick = $("#world-pick");
    const count = more ? `the first ${WORLDS_PAGE} worlds (type an id for others)` : `worlds (${worlds.length})`;
    pick.replaceChildren(el("option", { value: "" }, worlds.length ? `${count}…` : "no worlds"),
      ...worlds.map((x) => el("option", { value: x.world, selected: x.world === state.world ? "" : undefined },
        `${x.world} · ${x.events} events · ${dayText(x.day)}`)));
  }

  function go(world) {
    $("#world").value = world;
    const url = new URL(location.href);
    url.searchParams.set("world", world);
    for (const k of ["resident", "root"]) url.searchParams.delete(k);
    history.replaceState(null, "", url);
    state.selected = ""; state.root = "";
    connect(world, $("#token").value, $("#writer").value);
  }

  // ------------------------------------------------------------------ residents

  async function loadResidents(more) {
    let after = more ? state.residentsNext : undefined;
    let loaded = 0;
    do {
      const reply = await request({ type: "residents", limit: RESIDENTS_PAGE, ...(after ? { after } : {}) });
      for (const r of reply.residents) state.residents.set(r.resident, r.names || {});
      loaded += reply.residents.length;
      after = reply.next;
    } while (after && loaded < RESIDENTS_SHOWN);
    state.residentsNext = after || null;
    renderResidents();
  }

  function addResident(id) {
    if (!id || state.residents.has(id)) return;
    state.residents.set(id, {});
    debounce("residents", 300, renderResidents);
  }

  function renderResidents() {
    const filter = $("#resident-filter").value.trim().toLowerCase();
    const ids = [...state.residents.keys()].sort(byCodePoint);
    const shown = ids.filter((id) => !filter || id.toLowerCase().includes(filter) ||
      Object.values(state.residents.get(id)).some((n) => n.toLowerCase().includes(filter)));
    $("#residents").replaceChildren(...shown.map((id) => {
      const name = nameOf(id);
      return el("li", { class: id === state.selected ? "selected" : "", "data-resident": id, title: id,
        onclick: () => selectResident(id) }, name, name !== id ? el("span", { class: "id" }, id) : "");
    }));
    $("#resident-count").textContent = `${state.residents.size}${state.residentsNext ? "+" : ""}`;
    $("#residents-more").hidden = !state.residentsNext;
    $("#resident-ids").replaceChildren(...ids.slice(0, 500).map((id) => el("option", { value: id }, nameOf(id))));
    const pick = $("#stream-filter"), keep = pick.value;
    pick.replaceChildren(el("option", { value: "" }, "everyone"),
      ...ids.slice(0, 1000).map((id) => el("option", { value: id }, nameOf(id))));
    pick.value = keep;
  }

  // ------------------------------------------------------------------ live notifications

  function onBelief(b) {
    state.seq = Math.max(state.seq, b.seq);
    state.day = Math.max(state.day, b.day);
    addResident(b.resident);
    if (b.source_kind === "hearsay" && b.source) addResident(b.source);
    if (!state.exists && state.world) { // the world's first event just arrived
      debounce("reopen", 200, () => connect(state.world, $("#token").value, $("#writer").value));
      return;
    }
    if (state.paused) { // the latest STREAM_MAX kept (what the stream would show), all counted
      state.held.push(b);
      state.heldCount += 1;
      if (state.held.length > 2 * STREAM_MAX) state.held.splice(0, state.held.length - STREAM_MAX);
      nextFrame();
    } else pushStream([b]);
    if (b.resident === state.selected) throttle("refresh", REFRESH_MS, refreshSelected);
    debounce("events", 600, loadNewEvents);
  }

  // Notifications are kept as they come and drawn once a frame: one commit may bring
  // thousands (an announcement to a whole town), and drawing the list for each would hold
  // the page for as many redraws.
  function pushStream(items) {
    for (const b of items) state.stream.push(b);
    if (state.stream.length > 2 * STREAM_MAX) state.stream.splice(0, state.stream.length - STREAM_MAX);
    if (state.tab !== "stream") state.unseen += items.length;
    state.fresh += items.length;
    nextFrame();
  }

  function nextFrame() {
    if (timers.frame) return;
    timers.frame = requestAnimationFrame(() => {
      timers.frame = 0;
      if (state.stream.length > STREAM_MAX) state.stream.splice(0, state.stream.length - STREAM_MAX);
      setLive();
      if (state.unseen) {
        const badge = $("#stream-badge");
        badge.hidden = false;
        badge.textContent = String(state.unseen);
      }
      const fresh = state.fresh;
      state.fresh = 0;
      renderStream(Math.min(fresh, STREAM_MAX));
    });
  }

  function renderStream(fresh = 0) {
    const who = $("#stream-filter").value;
    const items = state.stream.filter((b) => !who || b.resident === who || b.source === who);
    const lastFresh = new Set(state.stream.slice(state.stream.length - fresh));
    $("#stream").replaceChildren(...items.slice().reverse().map((b) => {
      const prev = b.prev_confidence === null ? "—" : b.prev_confidence;
      return el("li", { class: lastFresh.has(b) ? "fresh" : "", "data-seq": b.seq, "data-resident": b.resident },
        el("span", { class: "muted" }, `#${b.seq} ${dayText(b.day)} `),
        el("b", {}, nameOf(b.resident)), " ", b.root, " = ", show(b.value), " ",
        el("i", {}, b.change), ` ${prev} → ${b.confidence} `, chip(b.state),
        b.source ? el("span", { class: "muted" }, ` from ${nameOf(b.source)}`) : "");
    }));
    $("#stream-held").textContent = state.paused ? `paused · ${state.heldCount} held` : "";
  }

  // ------------------------------------------------------------------ the selected resident

  async function selectResident(id) {
    if (id !== state.selected) Object.assign(state, { beliefs: [], beliefsMore: false });
    state.selected = id;
    $("#resident-name").textContent = nameOf(id);
    for (const li of $("#residents").children) li.classList.toggle("selected", li.dataset.resident === id);
    const url = new URL(location.href);
    url.searchParams.set("resident", id);
    history.replaceState(null, "", url);
    if (state.root) selectBelief(state.root, false); // not awaited: a large graph must not hold the page
    await Promise.allSettled([refreshBeliefs(), refreshNarrative(), refreshTrust()]);
  }

  function refreshSelected() {
    refreshBeliefs();
    refreshNarrative();
    if (state.root) selectBelief(state.root, false, true);
  }

  // The selected resident's beliefs in root order, a page at a time (SPEC §10.1 `limit` and
  // `after`), filtered on the sidecar by root prefix; one more than wanted is asked for, to
  // tell whether there are more. `next`: the page after those loaded; else (a refresh) the
  // first ones again, as many as are loaded: what a refresh costs follows what the table
  // shows, never how much the resident knows.
  async function refreshBeliefs(next = false) {
    const who = state.selected;
    const asked = ++state.beliefsAsked;
    const prefix = $("#belief-filter").value.trim();
    const kept = next ? state.beliefs : [];
    const want = next ? BELIEFS_PAGE : Math.min(BELIEFS_MAX, Math.max(BELIEFS_PAGE, state.beliefs.length));
    const frame = { type: "beliefs", resident: who, limit: want + 1 };
    if (prefix) frame.prefix = prefix;
    if (kept.length) frame.after = kept[kept.length - 1].root;
    try {
      const reply = await request(frame);
      if (asked !== state.beliefsAsked || who !== state.selected) return;
      state.beliefs = kept.concat(reply.beliefs.slice(0, want));
      state.beliefsMore = reply.beliefs.length > want;
      renderBeliefs();
    } catch (err) {
      if (asked !== state.beliefsAsked) return;
      $("#belief-count").textContent = "";
      $("#beliefs-more").hidden = true;
      $("#beliefs tbody").replaceChildren(el("tr", {}, el("td", { colspan: 4, class: "muted" }, err.message)));
    }
  }

  function renderBeliefs() {
    const n = state.beliefs.length;
    $("#belief-count").textContent = `(${n}${state.beliefsMore ? "+" : ""})`;
    $("#beliefs-more").hidden = !state.beliefsMore;
    $("#beliefs-more").textContent = `next ${BELIEFS_PAGE} beliefs…`;
    $("#beliefs tbody").replaceChildren(...state.beliefs.map((b) => el("tr", {
      class: b.root === state.root ? "selected" : "", "data-root": b.root, title: b.subject || "",
      onclick: () => { selectBelief(b.root, true); },
    },
    el("td", { class: "root" }, b.root), el("td", {}, show(b.value)),
    el("td", { class: "conf" }, bar(b.confidence, b.state), " ", chip(b.state)),
    el("td", {}, b.source_kind + (b.source ? ` · ${nameOf(b.source)}` : "") + (b.intervention ? ` · ${b.intervention}` : "")))));
  }

  async function refreshNarrative() {
    const who = state.selected;
    if (!who) return;
    const focus = {
      people: list($("#focus-people").value), places: list($("#focus-places").value),
      roots: list($("#focus-roots").value), topics: list($("#focus-topics").value),
    };
    for (const k of Object.keys(focus)) if (!focus[k].length) delete focus[k];
    const budget = Math.min(50000, Math.max(200, parseInt($("#budget").value, 10) || 2000));
    try {
      const n = await request({ type: "narrative", resident: who, lang: $("#lang").value, budget, focus });
      if (who !== state.selected) return;
      $("#narrative-text").textContent = n.text;
      $("#narrative-meta").textContent = `What ${nameOf(who)}'s LLM reads: ${[...n.text].length} of ${n.budget} characters` +
        ` · ${n.lang} · ${n.omitted} memor${n.omitted === 1 ? "y" : "ies"} left out` +
        `${n.compressed ? " · compressed" : ""} · ranked at ${dayText(n.day)}`;
    } catch (err) {
      $("#narrative-text").textContent = "";
      $("#narrative-meta").textContent = err.message;
    }
  }

  // One page of the selected resident's trust table (TRUST_PAGE entries), with previous and
  // next page buttons when it has more.
  async function refreshTrust() {
    const tbody = $("#trust tbody");
    if (state.trust.resident !== state.selected) state.trust = { resident: state.selected, after: null, before: [] };
    try {
      const frame = { type: "trust", resident: state.selected, limit: TRUST_PAGE };
      if (state.trust.after) frame.after = state.trust.after;
      const reply = await request(frame);
      const rows = reply.entries.map((e) => el("tr", {}, el("td", {}, nameOf(e.source)), el("td", {}, e.topic ?? "general"),
        el("td", {}, e.value.toFixed(2)), el("td", {}, e.history.map((h) => `${h.detail} (${dayText(h.day)})`).join(", "))));
      rows.push(el("tr", {}, el("td", { class: "muted" }, "anyone else"), el("td", {}, ""),
        el("td", {}, reply.default.toFixed(2)), el("td", {}, "")));
      const back = state.trust.before.length;
      if (back || reply.next) {
        rows.push(el("tr", {}, el("td", { colspan: 4, class: "pages" },
          el("span", { class: "muted" }, `page ${back + 1}`),
          back ? el("button", { id: "trust-previous", onclick: () => turnTrustPage(null, true) }, "previous page") : "",
          reply.next ? el("button", { id: "trust-next", onclick: () => turnTrustPage(reply.next, false) }, `next ${TRUST_PAGE} sources`) : "")));
      }
      tbody.replaceChildren(...rows);
    } catch (err) {
      tbody.replaceChildren(el("tr", {}, el("td", { colspan: 4, class: "muted" }, err.message)));
    }
  }

  async function turnTrustPage(after, back) {
    if (back) state.trust.after = state.trust.before.pop() ?? null;
    else { state.trust.before.push(state.trust.after); state.trust.after = after; }
    await refreshTrust();
  }

  // `live`: a refresh because the selected resident changed. The distribution lists every
  // resident holding the root (a whole town's rumour: 10,000 entries, ~1 MB), so a refresh
  // asks for it again at most every DISTRIBUTION_MS; explain and graph are hers.
  async function selectBelief(root, focusTab, live = false) {
    const again = !live || state.distribution.root !== root || performance.now() - state.distribution.at >= DISTRIBUTION_MS;
    if (again) state.distribution = { root, at: performance.now() };
    state.root = root;
    if (focusTab) setTab("belief");
    $("#belief-name").textContent = `${nameOf(state.selected)} · ${root}`;
    for (const tr of $("#beliefs tbody").children) tr.classList.toggle("selected", tr.dataset.root === root);
    const key = `${state.selected}\u0000${root}`;
    if (state.graph.key !== key) state.graph = { key, after: null, before: [] };
    const [explanation, distribution, graph] = await Promise.allSettled([
      request({ type: "explain", resident: state.selected, root, limit: EXPLAIN_LATEST }),
      again ? request({ type: "distribution", root }) : null,
      requestGraphPage(),
    ]);
    renderTimeline(explanation);
    if (again) renderDistribution(distribution);
    renderGraph(graph);
  }

  // One page of the selected belief's graph: the page at state.graph.after.
  function requestGraphPage() {
    const frame = { type: "graph", resident: state.selected, root: state.root, limit: GRAPH_PAGE };
    if (state.graph.after) frame.after = state.graph.after;
    return request(frame);
  }
  async function turnGraphPage(after, back) {
    if (back) state.graph.after = state.graph.before.pop() ?? null;
    else { state.graph.before.push(state.graph.after); state.graph.after = after; }
    const [graph] = await Promise.allSettled([requestGraphPage()]);
    renderGraph(graph);
  }

  function renderTimeline(result) {
    const box = $("#timeline");
    if (result.status !== "fulfilled") return box.replaceChildren(el("li", { class: "muted" }, result.reason.message));
    const x = result.value;
    const evidence = new Map(x.evidence.map((e) => [e.evidence_id, e]));
    // With a limit the reply holds the latest changes and evidence only: say how many there are.
    const latest = (shown, total, what) => shown < total ? `the latest ${shown} of ${total.toLocaleString("en")} ${what}` : `${total} ${what}`;
    const earlier = x.history_total > x.history.length || x.evidence_total > x.evidence.length
      ? [el("li", { class: "muted", id: "timeline-earlier" },
        `${latest(x.history.length, x.history_total, "changes")}; ${latest(x.evidence.length, x.evidence_total, "pieces of evidence")}`)]
      : [];
    box.replaceChildren(...earlier, ...x.history.map((h) => {
      const e = evidence.get(h.evidence_id);
      const from = h.prev_confidence === null ? "" : `${h.prev_confidence} → `;
      const valueChange = h.prev_value !== null && show(h.prev_value) !== show(h.value) ? ` (${show(h.prev_value)} → ${show(h.value)})` : "";
      return el("li", { "data-change": h.change },
        el("span", { class: "day" }, dayText(h.day)), " ", el("b", {}, h.change), ` ${from}${h.confidence} `, chip(h.state),
        ` ${show(h.value)}${valueChange}`,
        e ? el("div", { class: "ev" }, `${e.event_kind} ${e.event_id} · ${e.source_kind}${e.source ? " from " + nameOf(e.source) : ""}` +
          ` · ${e.relation}${e.hops && e.hops.length > 1 ? " · via " + e.hops.map(nameOf).join(" → ") : ""}` +
          `${e.trust !== null && e.trust !== undefined ? " · trust " + e.trust.toFixed(2) : ""}: ${e.subject}`) :
          el("div", { class: "ev" }, h.evidence_id ? `evidence ${h.evidence_id}` : h.detail ? `detail ${h.detail}` : "time passed"));
    }));
  }

  function renderDistribution(result) {
    const box = $("#distribution");
    if (result.status !== "fulfilled") return box.replaceChildren(el("p", { class: "muted" }, result.reason.message));
    const d = result.value;
    const total = d.residents.length || 1;
    const rows = d.values.map((v) => el("div", { class: "dist-row" },
      el("span", { class: "label", title: show(v.value) }, show(v.value)),
      el("span", { class: "bar" }, el("span", { class: "influencing", style: { width: `${(100 * v.residents) / total}%` } })),
      el("span", {}, `${v.residents} · mean ${v.mean_confidence} · ${v.independent_origins} origin(s)`)));
    if (d.observed_value !== undefined) {
      rows.push(el("p", { class: "muted" }, `the world observed ${show(d.observed_value)}; false share ${d.false_share}`));
    }
    rows.push(el("p", { class: "muted" }, d.residents.slice(0, 200).map((r) => `${nameOf(r.resident)}: ${show(r.value)} (${r.confidence})`).join(" · ") +
      (d.residents.length > 200 ? ` · and ${d.residents.length - 200} more` : "")));
    box.replaceChildren(...rows);
  }

  // ------------------------------------------------------------------ the belief graph

  const EDGE_COLOURS = {
    supports: "#2e7d32", contradicts: "#c62828", heard_from: "#1565c0", witnessed: "#999",
    corrected_by: "#8e24aa", inferred_from: "#333", said_by: "#6a1b9a", about: "#bbb",
  };
  const STATE_COLOURS = {
    influencing: "#2e7d32", doubtful: "#e6a100", anomalous: "#8e24aa", corrected: "#1565c0", past: "#8a8a8a",
  };
  // Columns left to right: people | events | claims and places. Tellers and witnesses sit
  // next to the events they said or saw; the belief next to the evidence behind it.
  const COLUMN = { person: 0, event: 1, claim: 2, place: 2 };
  const BOX = { w: 168, h: 28, gapY: 10, gapX: 44 };
  const MIN_FIT = 0.7; // a larger graph opens at this zoom (pan to see the rest)
  const view = { x: 0, y: 0, k: 1, width: 0, height: 0, key: "" };

  function nodeLabel(n) {
    if (n.type === "claim") return `${nameOf(n.resident)}: ${show(n.value)} (${n.confidence})`;
    if (n.type === "person") return nameOf(n.name);
    if (n.type === "event") {
      const subject = n.label.replace(/^\S+ \S+: /, ""); // the label is "<kind> <event id>: <subject>"
      return `${dayText(n.day)} · ${n.speaker ? nameOf(n.speaker) : n.kind}: ${subject}`;
    }
    return n.label;
  }

  // A deterministic layered layout: nodes in columns by type, events by day, then two
  // barycentre passes (each node moved towards the mean row of its neighbours) to uncross
  // edges; ties by id. Boxes never overlap: one box per row slot.
  function layout(nodes, edges) {
    const cols = [[], [], []];
    for (const n of nodes) cols[COLUMN[n.type] ?? 2].push(n);
    cols[1].sort((a, b) => (a.day - b.day) || byCodePoint(a.id, b.id));
    for (const c of [cols[0], cols[2]]) c.sort((a, b) => byCodePoint(a.type, b.type) || byCodePoint(a.id, b.id));
    const neighbours = new Map(nodes.map((n) => [n.id, []]));
    for (const e of edges) {
      if (neighbours.has(e.source) && neighbours.has(e.target)) {
        neighbours.get(e.source).push(e.target);
        neighbours.get(e.target).push(e.source);
      }
    }
    const row = new Map();
    const index = () => cols.forEach((c) => c.forEach((n, i) => row.set(n.id, i)));
    index();
    for (let pass = 0; pass < 2; pass++) {
      for (const ci of [0, 2]) {
        const score = (n) => {
          const rows = neighbours.get(n.id).map((m) => row.get(m)).filter((r) => r !== undefined);
          return rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : row.get(n.id);
        };
        const scored = cols[ci].map((n) => [score(n), n]);
        scored.sort((a, b) => (a[0] - b[0]) || byCodePoint(a[1].id, b[1].id));
        cols[ci] = scored.map((s) => s[1]);
        index();
      }
    }
    const used = cols.map((c, i) => [c, i]).filter(([c]) => c.length);
    const tallest = Math.max(1, ...used.map(([c]) => c.length));
    const height = tallest * (BOX.h + BOX.gapY) + BOX.gapY;
    const at = new Map();
    used.forEach(([c], slot) => {
      const x = BOX.gapY + slot * (BOX.w + BOX.gapX);
      const top = (height - c.length * (BOX.h + BOX.gapY)) / 2 + BOX.gapY / 2;
      c.forEach((n, i) => at.set(n.id, { x, y: top + i * (BOX.h + BOX.gapY) }));
    });
    return { at, width: BOX.gapY * 2 + used.length * BOX.w + (used.length - 1) * BOX.gapX, height };
  }

  function renderGraph(result) {
    const box = $("#graph");
    if (result.status !== "fulfilled") return box.replaceChildren(el("p", { class: "muted" }, result.reason.message));
    let { nodes, edges } = result.value;
    const next = result.value.next ?? null;
    let dropped = 0;
    if (nodes.length > GRAPH_NODES_MAX) { // a belief with thousands of evidence events
      // Keep the beliefs and places, the latest events, and the people linked to those.
      const keep = new Set(nodes.filter((n) => n.type === "claim" || n.type === "place").map((n) => n.id));
      const events = nodes.filter((n) => n.type === "event").sort((a, b) => a.day - b.day);
      for (const n of events.slice(-Math.max(10, Math.floor((GRAPH_NODES_MAX - keep.size) / 2)))) keep.add(n.id);
      const typeOf = new Map(nodes.map((n) => [n.id, n.type])); // ids are opaque: go by type
      const kept = new Set(keep); // the people who said or saw a kept event
      for (const e of edges) {
        const from = typeOf.get(e.source), to = typeOf.get(e.target);
        if (from === "person" && to === "event" && kept.has(e.target)) keep.add(e.source);
        if (to === "person" && from === "event" && kept.has(e.source)) keep.add(e.target);
      }
      dropped = nodes.length - keep.size;
      nodes = nodes.filter((n) => keep.has(n.id));
      edges = edges.filter((e) => keep.has(e.source) && keep.has(e.target));
    }
    const { at, width, height } = layout(nodes, edges);
    const root = svg("svg", { role: "img", "aria-label": "belief graph" });
    const defs = svg("defs");
    for (const [type, colour] of Object.entries(EDGE_COLOURS)) {
      const marker = svg("marker", { id: `arrow-${type}`, viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
      marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: colour }));
      defs.append(marker);
    }
    root.append(defs);
    const stage = svg("g", { id: "graph-stage" });
    root.append(stage);
    for (const e of edges) {
      const a = at.get(e.source), b = at.get(e.target);
      if (!a || !b) continue;
      const colour = EDGE_COLOURS[e.type] || "#777";
      // Leave the right or left side of one box for the other; a curve keeps same-column edges apart.
      const forward = a.x <= b.x;
      const x1 = forward ? a.x + BOX.w : a.x, x2 = forward ? (a.x === b.x ? b.x + BOX.w : b.x) : b.x + BOX.w;
      const y1 = a.y + BOX.h / 2, y2 = b.y + BOX.h / 2;
      const bend = a.x === b.x ? 40 : Math.abs(x2 - x1) / 2;
      const c1 = forward ? x1 + bend : x1 - bend, c2 = forward ? x2 + (a.x === b.x ? bend : -bend) : x2 + bend;
      const path = svg("path", {
        d: `M ${x1} ${y1} C ${c1} ${y1}, ${c2} ${y2}, ${x2} ${y2}`, fill: "none", stroke: colour,
        "stroke-width": e.type === "about" ? 1 : 1.6, "stroke-dasharray": e.type === "about" ? "3 3" : "",
        "marker-end": e.type === "about" ? "" : `url(#arrow-${e.type})`, "data-edge": e.type,
      });
      path.append(svg("title", {}, `${e.type}${e.count > 1 ? " ×" + e.count : ""}${e.day !== undefined ? " · " + dayText(e.day) : ""}`));
      stage.append(path);
    }
    const labels = [];
    for (const n of nodes) {
      const p = at.get(n.id);
      const fill = n.type === "claim" ? STATE_COLOURS[n.state] || "#2e7d32" : n.type === "event" ? "#f0ede4" : n.type === "person" ? "#e6eef8" : "#eaf7e6";
      const g = svg("g", { "data-node": n.id, "data-type": n.type });
      g.append(svg("rect", { x: p.x, y: p.y, width: BOX.w, height: BOX.h, rx: n.type === "person" ? 15 : 5, fill, stroke: "#999" }));
      const full = nodeLabel(n);
      const text = svg("text", { x: p.x + 8, y: p.y + BOX.h / 2 + 4, fill: n.type === "claim" ? "#fff" : "#222" }, full);
      g.append(svg("title", {}, n.type === "claim" ? `${full}\n${n.root} · ${n.state}\n${n.subject}` : full));
      g.append(text);
      stage.append(g);
      labels.push([text, full]);
    }
    box.replaceChildren(root);
    // Clip each label to its box (measured, so no label runs into a neighbour).
    for (const [text, full] of labels) {
      if (text.getComputedTextLength() <= BOX.w - 14) continue;
      let lo = 0, hi = full.length;
      while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2);
        text.textContent = full.slice(0, mid) + "…";
        if (text.getComputedTextLength() <= BOX.w - 14) lo = mid; else hi = mid - 1;
      }
      text.textContent = full.slice(0, lo) + "…";
    }
    // A live refresh of the same belief keeps the user's pan and zoom; a new belief is fitted.
    const key = `${state.selected}\u0000${state.root}\u0000${state.graph.after ?? ""}`; // a new page is fitted too
    Object.assign(view, { width, height });
    if (view.key === key) applyView();
    else { view.key = key; fitGraph(); }
    $("#graph-legend").replaceChildren(
      ...[...new Set(edges.map((e) => e.type))].map((t) => el("span", {}, el("i", { style: { background: EDGE_COLOURS[t] } }), t.replace("_", " "))),
      dropped ? el("span", { class: "muted" }, `${dropped} older events and people not drawn`) : "",
      state.graph.before.length || next ? el("span", { class: "pages" },
        el("span", { class: "muted" }, `page ${state.graph.before.length + 1}`),
        state.graph.before.length ? el("button", { id: "graph-previous", onclick: () => turnGraphPage(null, true) }, "previous page") : "",
        next ? el("button", { id: "graph-next", onclick: () => turnGraphPage(next, false) }, `next ${GRAPH_PAGE} events`) : "") : "");
  }

  function applyView() {
    const stage = document.getElementById("graph-stage");
    if (stage) stage.setAttribute("transform", `translate(${view.x} ${view.y}) scale(${view.k})`);
    document.body.dataset.graphZoom = view.k.toFixed(3);
  }
  function fitGraph() {
    const box = $("#graph").getBoundingClientRect();
    if (!view.width || !box.width) return;
    view.k = Math.max(MIN_FIT, Math.min(1.3, box.width / view.width, box.height / view.height));
    view.x = Math.max(0, (box.width - view.width * view.k) / 2);
    view.y = 8;
    applyView();
  }
  function zoom(factor, cx, cy) {
    const box = $("#graph").getBoundingClientRect();
    const x = cx ?? box.width / 2, y = cy ?? box.height / 2;
    const k = Math.min(8, Math.max(0.1, view.k * factor));
    view.x = x - ((x - view.x) * k) / view.k;
    view.y = y - ((y - view.y) * k) / view.k;
    view.k = k;
    applyView();
  }
  function wireGraph() {
    const box = $("#graph");
    let drag = null;
    box.addEventListener("pointerdown", (ev) => {
      drag = { x: ev.clientX, y: ev.clientY, vx: view.x, vy: view.y };
      box.classList.add("dragging");
      box.setPointerCapture(ev.pointerId);
    });
    box.addEventListener("pointermove", (ev) => {
      if (!drag) return;
      view.x = drag.vx + ev.clientX - drag.x;
      view.y = drag.vy + ev.clientY - drag.y;
      applyView();
    });
    const end = () => { drag = null; box.classList.remove("dragging"); };
    box.addEventListener("pointerup", end);
    box.addEventListener("pointercancel", end);
    box.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const r = box.getBoundingClientRect();
      zoom(ev.deltaY < 0 ? 1.15 : 1 / 1.15, ev.clientX - r.left, ev.clientY - r.top);
    }, { passive: false });
    $("#zoom-in").addEventListener("click", () => zoom(1.25));
    $("#zoom-out").addEventListener("click", () => zoom(0.8));
    $("#zoom-fit").addEventListener("click", fitGraph);
  }

  // ------------------------------------------------------------------ the event log

  async function loadEvents() {
    const from = Math.max(1, state.eventsLast - EVENTS_PAGE + 1);
    const reply = await request({ type: "events", from, limit: EVENTS_PAGE });
    state.events = reply.events;
    state.eventsLast = reply.last;
    state.eventsOldest = reply.events.length ? reply.events[0].seq : null;
    renderEvents();
  }
  async function loadOlderEvents() {
    if (!state.eventsOldest || state.eventsOldest <= 1) return;
    const from = Math.max(1, state.eventsOldest - EVENTS_PAGE);
    const reply = await request({ type: "events", from, limit: state.eventsOldest - from });
    state.events = reply.events.concat(state.events);
    state.eventsOldest = from;
    renderEvents();
  }
  async function loadNewEvents() {
    if (!state.exists) return;
    const newest = state.events.length ? state.events[state.events.length - 1].seq : 0;
    const reply = await request({ type: "events", from: newest + 1, limit: 1000 });
    if (!reply.events.length && reply.last === state.eventsLast) return;
    state.events = state.events.concat(reply.events).slice(-20 * EVENTS_PAGE); // bounded
    if (state.events.length) state.eventsOldest = state.events[0].seq;
    // A registration changes no belief (no notification): its names arrive with the log.
    if (reply.events.some((e) => e.kind === "register")) loadResidents().then(() => {
      renderBeliefs(); renderStream(); renderEvents();
      if (state.selected) $("#resident-name").textContent = nameOf(state.selected);
    });
    state.eventsLast = reply.last;
    if (state.eventsOldest === null && reply.events.length) state.eventsOldest = reply.events[0].seq;
    renderEvents();
  }
  function renderEvents() {
    const writer = state.role === "writer";
    $("#events-meta").textContent = `${state.eventsLast} events in the log; showing seq ${state.eventsOldest ?? "—"}` +
      ` to ${state.events.length ? state.events[state.events.length - 1].seq : "—"}` +
      (writer ? " · fork: a new world with the log up to that event" : " · read-only (give a writer token to fork)");
    $("#events tbody").replaceChildren(...state.events.slice().reverse().map((e) => el("tr", { "data-seq": e.seq },
      el("td", { class: "seq" }, e.seq), el("td", {}, dayText(e.day)), el("td", {}, e.kind),
      el("td", {}, e.by ? nameOf(e.by) : ""), el("td", { title: e.event_id }, e.subject || el("span", { class: "muted" }, e.event_id)),
      el("td", {}, writer ? el("button", { type: "button", onclick: () => fork(e.seq) }, "fork here") : ""))));
    $("#events-older").hidden = !state.eventsOldest || state.eventsOldest <= 1;
  }
  async function fork(seq) {
    const into = $("#fork-into").value.trim() || `${state.world}-at-${seq}`;
    const out = $("#fork-result");
    out.textContent = `forking at seq ${seq}…`;
    try {
      const f = await request({ type: "fork", into, at: seq });
      out.replaceChildren(`forked into ${f.world}: ${f.events} events, ${f.beliefs} beliefs, ${dayText(f.day)} `,
        el("button", { type: "button", onclick: () => go(f.world) }, "open it"));
    } catch (err) {
      out.textContent = `fork refused: ${err.code || ""} ${err.message}`;
    }
  }

  // ------------------------------------------------------------------ tabs and wiring

  function setTab(name) {
    state.tab = name;
    document.body.dataset.tab = name;
    for (const b of document.querySelectorAll(".tabs button")) b.classList.toggle("on", b.dataset.tab === name);
    for (const t of document.querySelectorAll(".tab")) t.classList.toggle("on", t.id === `tab-${name}`);
    if (name === "stream") { state.unseen = 0; $("#stream-badge").hidden = true; }
    if (name === "belief") requestAnimationFrame(fitGraph);
  }

  for (const b of document.querySelectorAll(".tabs button")) b.addEventListener("click", () => setTab(b.dataset.tab));
  setTab(state.tab);
  wireGraph();
  $("#world").value = params.get("world") || "";
  $("#token").value = params.get("token") || "";
  $("#writer").value = params.get("writer") || "";
  $("#connect").addEventListener("submit", (ev) => { ev.preventDefault(); go($("#world").value.trim()); });
  $("#world-pick").addEventListener("change", (ev) => { if (ev.target.value) go(ev.target.value); });
  $("#resident-filter").addEventListener("input", renderResidents);
  $("#residents-more").addEventListener("click", () => loadResidents(true));
  $("#belief-filter").addEventListener("input", () => debounce("beliefs", 250, () => {
    if (state.selected) { state.beliefs = []; refreshBeliefs(); }
  }));
  $("#beliefs-more").addEventListener("click", () => refreshBeliefs(true));
  $("#events-older").addEventListener("click", loadOlderEvents);
  $("#narrative-form").addEventListener("input", () => debounce("narrative", 300, refreshNarrative));
  $("#narrative-form").addEventListener("submit", (ev) => { ev.preventDefault(); refreshNarrative(); });
  $("#lang").addEventListener("change", () => { renderResidents(); renderBeliefs(); renderStream(); renderEvents();
    if (state.selected) $("#resident-name").textContent = nameOf(state.selected); });
  $("#stream-filter").addEventListener("change", () => renderStream());
  $("#stream-pause").addEventListener("click", () => {
    state.paused = !state.paused;
    $("#stream-pause").textContent = state.paused ? "resume" : "pause";
    document.body.dataset.paused = String(state.paused);
    if (!state.paused && state.held.length) { const held = state.held; state.held = []; pushStream(held); }
    if (!state.paused) state.heldCount = 0;
    renderStream();
  });
  window.addEventListener("resize", () => debounce("fit", 150, fitGraph));
  connect(params.get("world") || "", params.get("token") || "", params.get("writer") || "");
})();
