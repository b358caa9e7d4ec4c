// Filters added with subscribe() after the hello survive a kill -9 of the sidecar (restored
// in hello.filters and resumed, each change exactly once); the typed focus and filter
// parameters of narrative() and beliefs(); the launch-and-supervise helper.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { WebSocket } from "ws";
import { ROOT, python, startSidecar, tempDir, until } from "./sidecar.js";
import { CredenceClient, decodeFrame } from "../dist/index.js";
import { launchSidecar } from "../dist/launch.js";

const observe = (event_id, day, witnesses, root, value, extra = {}) =>
  ({ kind: "observe", event_id, day, witnesses, claim: { root, value }, subject: `${root} is ${value}`, ...extra });
const say = (event_id, day, speaker, listeners, root, value) =>
  ({ kind: "say", event_id, day, speaker, listeners, claim: { root, value }, subject: `${root} is ${value}` });

/** The i-th event of a stream that forms, doubts and corrects beliefs of mira, kai, ana and bo. */
function streamEvent(i) {
  const day = 1 + i / 10;
  switch (i % 4) {
    case 0: return observe(`s-${i}`, day, ["mira", "kai"], `water:w${i % 5}`, i % 8 < 4 ? "clean" : "dirty");
    case 1: return say(`s-${i}`, day, "bo", ["mira", "kai", "ana"], `water:w${i % 5}`, "poisoned");
    case 2: return say(`s-${i}`, day, "ana", ["kai", "mira"], `mill:m${i % 3}`, i % 6 < 3 ? "open" : "shut");
    default: return observe(`s-${i}`, day, ["ana", "bo"], `road:r${i % 7}`, i);
  }
}

/** SPEC §8.2–8.3 written out: does a change match these filters, minus the excluded? */
function wanted(note, filters, excluded) {
  if (excluded.has(note.resident)) return false;
  return filters.some((f) => {
    if (f.residents !== "*" && !f.residents.includes(note.resident)) return false;
    if (f.roots?.length && !f.roots.some((p) => note.root.startsWith(p))) return false;
    if (f.changes?.length && !f.changes.includes(note.change)) return false;
    if (f.crossing !== undefined) {
      const before = note.prev_confidence ?? -1;
      return (before < f.crossing) !== (note.confidence < f.crossing);
    }
    return true;
  });
}

/** A real `ws` socket that also keeps every frame the client wrote, decoded; while
 * `gate.shut`, it dials a closed port instead (the connection is refused). */
function recording(sent, gate = { shut: false }) {
  return (url) => {
    const ws = new WebSocket(gate.shut ? "ws://127.0.0.1:9" : url);
    const send = ws.send.bind(ws);
    ws.send = (data) => {
      sent.push(decodeFrame(typeof data === "string" ? data : new Uint8Array(data)));
      send(data);
    };
    return ws;
  };
}

test("filters added after the hello are resumed after a kill -9, every change exactly once", async () => {
  let sidecar = await startSidecar();
  const { db, port } = sidecar;
  const fast = { url: sidecar.url, world: "town", minDelayMs: 50, maxDelayMs: 200 };
  const writer = new CredenceClient({ ...fast, mirror: false });
  const sent = [];
  const gate = { shut: false };
  const reader = new CredenceClient({ ...fast, subscribe: ["bo"], socket: recording(sent, gate) });
  const got = [];
  const resumed = [];
  reader.on("belief", (b) => got.push(b));
  reader.on("resumed", (r) => resumed.push(r));
  const total = 240;
  try {
    await writer.connect();
    await reader.connect();
    // Filters added after the hello: two of them, then an unsubscribe that edits one filter
    // and excludes ana from the "*" filter.
    await reader.subscribe({ residents: ["mira", "ana"], roots: ["water:"] });
    await reader.subscribe({ residents: "*", changes: ["doubted", "corrected"] });
    await reader.subscribe({ residents: ["kai"], roots: ["mill:"], crossing: 60 });
    await reader.unsubscribe(["ana"]);
    const filters = [
      { residents: ["bo"] },
      { residents: ["mira"], roots: ["water:"] },
      { residents: "*", changes: ["doubted", "corrected"] },
      { residents: ["kai"], roots: ["mill:"], crossing: 60 },
    ];
    assert.deepEqual(reader.subscriptions, filters);
    const acks = [];
    for (let i = 0; i < total; i++) {
      acks.push(writer.send(streamEvent(i)));
      if (i === total / 2) {
        // kill -9 mid-stream, with events in flight, then the same database and port.
        await until(() => got.length >= 20, "some notifications before the kill");
        gate.shut = true; // the reader stays away until the writer is done: a real backlog
        sidecar.proc.kill("SIGKILL");
        await until(() => reader.state === "reconnecting" && writer.state === "reconnecting", "both reconnecting");
        sidecar = await startSidecar({ db, port });
      }
    }
    const done = await Promise.all(acks);
    assert.equal(done.length, total);
    gate.shut = false;
    await until(() => resumed.length === 1, "the reader's resume");
    await reader.sync();

    // The oracle: every change of the world, read back with resume 0, filtered by the SPEC's rules.
    const oracle = new CredenceClient({ url: sidecar.url, world: "town", subscribe: "*", resumeFrom: 0, reconnect: false });
    const all = [];
    oracle.on("belief", (b) => all.push(b));
    let replayed = false;
    oracle.on("resumed", () => (replayed = true));
    await oracle.connect();
    await until(() => replayed, "the oracle's backlog");
    oracle.close();
    const expected = all.filter((b) => wanted(b, filters, new Set(["ana"])));
    assert.ok(expected.length > 50, `a stream worth testing: ${expected.length}`);
    const seqs = got.map((b) => b.seq);
    assert.equal(new Set(seqs).size, seqs.length, "no notification twice");
    assert.deepEqual(seqs, expected.map((b) => b.seq), "exactly the matching changes, in order");
    // The second hello restored the filters and resumed; a backlog was really replayed.
    const hellos = sent.filter((f) => f.type === "hello");
    assert.equal(hellos.length, 2);
    assert.deepEqual(hellos[0].subscribe, ["bo"]);
    assert.deepEqual(hellos[1].filters, filters);
    assert.equal(typeof hellos[1].resume, "number");
    const excl = sent.filter((f) => f.type === "unsubscribe" && f.rid === "credence-js:excluded");
    assert.deepEqual(excl.map((f) => f.residents), [["ana"]]);
    assert.equal(resumed.length, 1);
    assert.ok(resumed[0].sent > 20, `a real backlog: ${resumed[0].sent}`);
    if (process.env.CREDENCE_JS_DEBUG) console.log("resumed", resumed[0], "received", seqs.length);
  } finally {
    reader.close();
    writer.close();
    await sidecar.stop();
  }
});

test("narrative focus and beliefs filters are typed parameters sent as the SPEC names them", async () => {
  const sidecar = await startSidecar();
  const sent = [];
  const client = new CredenceClient({ url: sidecar.url, world: "town", socket: recording(sent) });
  try {
    await client.connect();
    await client.send(observe("f-1", 1, ["mira"], "water:well", "clean", { places: ["well"] }));
    await client.send(observe("f-2", 1, ["mira"], "mill:wheel", "broken", { people: ["bo"] }));
    await client.send(say("f-3", 2, "kai", ["mira"], "festival:day", "sunday"));
    await client.send(observe("f-4", 2, ["mira"], "road:north", "flooded"));

    const wet = await client.beliefs("mira", { prefix: "water:" });
    assert.deepEqual(wet.beliefs.map((b) => b.root), ["water:well"]);
    const sure = await client.beliefs("mira", { min_confidence: 70, states: ["influencing"] });
    assert.deepEqual(sure.beliefs.map((b) => b.root), ["believes:kai:festival:day", "mill:wheel", "road:north", "water:well"]);
    assert.ok(!sure.beliefs.some((b) => b.root === "festival:day"), "hearsay at 58 is below 70");
    const bo = await client.beliefs("mira", { people: ["bo"] });
    assert.deepEqual(bo.beliefs.map((b) => b.root), ["mill:wheel"]);
    const after = await client.beliefs("mira", "mill:wheel"); // the old (resident, after) form
    assert.deepEqual(after.beliefs.map((b) => b.root), ["road:north", "water:well"]);
    const pages = []; // a page at a time: limit, then after the last root received
    for (let page = await client.beliefs("mira", { limit: 2 }); ; ) {
      pages.push(page.beliefs.map((b) => b.root));
      if (page.beliefs.length < 2) break;
      page = await client.beliefs("mira", { after: page.beliefs.at(-1).root, limit: 2 });
    }
    assert.deepEqual(pages, [["believes:kai:festival:day", "festival:day"], ["mill:wheel", "road:north"], ["water:well"]]);

    const focus = { people: ["bo"], places: ["well"], roots: ["road:"], topics: [] };
    const n = await client.narrative("mira", { budget: 2000, lang: "en", focus });
    assert.deepEqual(n.focus, focus);
    const matched = n.sections.flatMap((s) => s.entries).flatMap((e) => e.why?.matched ?? []);
    for (const m of ["person:bo", "place:well", "root:road:"]) assert.ok(matched.includes(m), `${m} in ${matched}`);
    const plain = await client.narrative("mira");
    const water = await client.narrative("mira", { focus: { roots: ["water:"] } });
    assert.deepEqual(water.focus, { people: [], places: [], roots: ["water:"], topics: [] });
    const first = (r) => r.sections.find((s) => s.name === "believe").entries[0].root;
    assert.equal(first(plain), "road:north", "the newest first without a focus");
    assert.equal(first(water), "water:well", "what the focus names first");

    const frames = sent.filter((f) => f.type === "narrative" || f.type === "beliefs");
    assert.deepEqual(frames[0].prefix, "water:");
    assert.deepEqual([frames[1].min_confidence, frames[1].states], [70, ["influencing"]]);
    assert.deepEqual([frames[4].after, frames[4].limit], [undefined, 2]);
    assert.deepEqual([frames[5].after, frames[5].limit], ["festival:day", 2]);
    assert.deepEqual(frames[7].focus, focus);
    assert.equal(frames[8].focus, undefined);
  } finally {
    client.close();
    await sidecar.stop();
  }
});

test("launchSidecar starts credence serve, restarts it on the same port after kill -9, stops it", async () => {
  const db = join(tempDir("credence-launch-"), "save.db");
  const sidecar = await launchSidecar({
    command: [python(), "-m", "sidecar.cli"], cwd: ROOT,
    args: ["--db", db, "--log-level", "WARNING"], restartDelayMs: 50,
  });
  const ready = [];
  sidecar.on("ready", (url) => ready.push(url));
  const client = new CredenceClient({ url: () => sidecar.url, world: "town", minDelayMs: 50, maxDelayMs: 200 });
  try {
    assert.match(sidecar.url, /^ws:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(new URL(sidecar.url).port, "0");
    const first = sidecar.url;
    const pid = sidecar.pid;
    await client.connect();
    await client.send(observe("l-1", 1, ["mira"], "water:well", "clean"));
    process.kill(pid, "SIGKILL");
    await until(() => ready.length === 1, "the restart");
    assert.equal(sidecar.restarts, 1);
    assert.equal(sidecar.url, first, "restarted on the same port");
    assert.notEqual(sidecar.pid, pid);
    const ack = await client.send(observe("l-2", 2, ["mira"], "road:north", "flooded"));
    assert.equal(ack.duplicate, false);
    const beliefs = await client.beliefs("mira");
    assert.deepEqual(beliefs.beliefs.map((b) => b.root), ["road:north", "water:well"], "the same database");
  } finally {
    client.close();
    const last = sidecar.pid;
    await sidecar.stop();
    assert.equal(sidecar.running, false);
    assert.throws(() => process.kill(last, 0), "the process is gone");
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(sidecar.running, false, "no restart after stop()");
  }
});
