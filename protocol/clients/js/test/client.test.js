// CredenceClient against a real sidecar: acks, errors, notifications and the mirror, paging,
// backpressure, and reconnect with resume and resend across a sidecar restart.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startSidecar, until } from "./sidecar.js";
import { CredenceClient, CredenceError, joinGraphPages, joinTrustPages } from "../dist/index.js";

const observe = (event_id, day, witnesses, root, value, subject = `${root} is ${value}`) =>
  ({ kind: "observe", event_id, day, witnesses, claim: { root, value }, subject });

test("send resolves with the ack; notifications are typed and kept in the mirror", async () => {
  const sidecar = await startSidecar();
  const client = new CredenceClient({ url: sidecar.url, world: "town", subscribe: "*" });
  try {
    const notes = [];
    client.on("belief", (b) => notes.push(b));
    await client.connect();
    const ack = await client.send({
      kind: "say", event_id: "e-1", day: 1, speaker: "bo", listeners: ["mira"],
      claim: { root: "water:well", value: "poisoned" }, subject: "The well is poisoned",
    });
    assert.equal(ack.type, "ack");
    assert.equal(ack.duplicate, false);
    // A notification caused by an event comes before its ack (SPEC §14.2).
    const formed = notes.find((n) => n.resident === "mira" && n.root === "water:well");
    assert.equal(formed.change, "formed");
    assert.equal(formed.confidence, 58);
    assert.equal(client.lastSeq, ack.seq);
    assert.equal(client.mirror.get("mira", "water:well").value, "poisoned");
    await client.send(observe("e-2", 3, ["mira"], "water:well", "clean"));
    const mirrored = client.mirror.get("mira", "water:well");
    assert.equal(mirrored.state, "doubtful");
    assert.equal(mirrored.confidence, 38);
    // The same id again is acknowledged as a duplicate.
    const dup = await client.send(observe("e-2", 3, ["mira"], "water:well", "clean"));
    assert.equal(dup.duplicate, true);
    // A refused event rejects with the sidecar's code; the connection stays usable.
    await assert.rejects(
      client.send(observe("e-3", 3, ["mira"], "water:well", 1.5)),
      (err) => err instanceof CredenceError && err.code === "invalid_event" && err.eventId === "e-3",
    );
    const explained = await client.explain("mira", "water:well");
    assert.deepEqual(explained.history.map((h) => h.change), ["formed", "doubted"]);
    const latest = await client.explain("mira", "water:well", 1); // the latest of each only
    assert.deepEqual(latest.history.map((h) => h.change), ["doubted"]);
    assert.deepEqual([latest.history_total, latest.evidence.length, latest.evidence_total], [2, 1, 2]);
    const other = new CredenceClient({ url: sidecar.url, world: "town", subscribe: ["mira"] });
    await other.connect();
    await other.loadMirror("mira");
    assert.equal(other.mirror.get("mira", "water:well").confidence, 38);
    other.close();
  } finally {
    client.close();
    await sidecar.stop();
  }
});

test("paged replies are joined into one", async () => {
  const sidecar = await startSidecar();
  const client = new CredenceClient({ url: sidecar.url, world: "town" });
  try {
    await client.connect();
    const long = "x".repeat(600);
    const acks = [];
    for (let i = 0; i < 200; i++) {
      acks.push(client.send(observe(`p-${i}`, 1, ["mira"], `root:${String(i).padStart(3, "0")}`, "v", long)));
    }
    await Promise.all(acks);
    const reply = await client.beliefs("mira");
    assert.equal(reply.beliefs.length, 200);
    assert.ok(reply.part >= 1, `joined ${reply.part + 1} parts`);
    assert.equal(reply.more, false);
    assert.deepEqual(reply.beliefs.map((b) => b.root), acks.map((_, i) => `root:${String(i).padStart(3, "0")}`));
  } finally {
    client.close();
    await sidecar.stop();
  }
});

test("a narrative too long for one frame: text pieces and section runs are joined", async () => {
  const sidecar = await startSidecar();
  const client = new CredenceClient({ url: sidecar.url, world: "town" });
  try {
    await client.connect();
    const acks = [];
    for (let i = 0; i < 900; i++) {
      acks.push(client.send({
        kind: "say", event_id: `zh-${i}`, day: 1, speaker: "阿明", listeners: ["阿美"],
        claim: { root: `傳聞:${i}`, value: i }, subject: `第${i}號傳聞說市集的橋在夜裡被人修好了，詳細詳細詳細`,
      }));
    }
    await Promise.all(acks);
    const reply = await client.query({ type: "narrative", resident: "阿美", budget: 50000, lang: "zh-Hant" });
    assert.ok(reply.part >= 2, `joined ${reply.part + 1} parts`);
    assert.ok(new TextEncoder().encode(reply.text).length > 61440, "the text alone is more than a frame");
    assert.ok(reply.text.length <= 50000);
    assert.deepEqual(reply.sections.map((s) => s.name),
      ["sure", "believe", "told", "said", "acts", "doubts", "anomalies", "corrections", "owe", "goals", "people", "faded"]);
    const told = reply.sections[2].entries;
    assert.ok(told.length > 100);
    for (const entry of told) assert.ok(reply.text.includes(entry.text));
  } finally {
    client.close();
    await sidecar.stop();
  }
});

test("backpressure: send waits while maxInFlight events await their ack", async () => {
  const sidecar = await startSidecar();
  const client = new CredenceClient({ url: sidecar.url, world: "town", maxInFlight: 4 });
  try {
    await client.connect();
    let most = 0;
    const sends = [];
    for (let i = 0; i < 60; i++) {
      sends.push(client.send(observe(`b-${i}`, 1, ["kai"], `r:${i}`, i)));
      most = Math.max(most, client.inFlight);
      await new Promise((r) => setImmediate(r));
      most = Math.max(most, client.inFlight);
    }
    const acks = await Promise.all(sends);
    assert.ok(most <= 4, `at most 4 in flight, saw ${most}`);
    assert.deepEqual(acks.map((a) => a.event_id), sends.map((_, i) => `b-${i}`));
  } finally {
    client.close();
    await sidecar.stop();
  }
});

test("reconnect resumes after the last seq and resends unacked events exactly once", async () => {
  let sidecar = await startSidecar();
  const { db, port } = sidecar;
  const client = new CredenceClient({
    url: sidecar.url, world: "town", subscribe: "*", minDelayMs: 50, maxDelayMs: 200,
  });
  const seqs = [];
  const states = [];
  client.on("belief", (b) => seqs.push(b.seq));
  client.on("state", (s) => states.push(s));
  try {
    await client.connect();
    await client.send(observe("r-0", 1, ["mira"], "r:0", 0));
    // Stop the sidecar with events in flight, send more while it is down, then start it
    // again on the same port and database.
    const sends = [];
    for (let i = 1; i <= 20; i++) sends.push(client.send(observe(`r-${i}`, 1, ["mira", "kai"], `r:${i}`, i)));
    await sidecar.stop();
    await until(() => client.state === "reconnecting", "reconnecting");
    const unackedAtStop = client.inFlight;
    for (let i = 21; i <= 40; i++) sends.push(client.send(observe(`r-${i}`, 1, ["mira", "kai"], `r:${i}`, i)));
    sidecar = await startSidecar({ db, port });
    const acks = await Promise.all(sends);
    assert.equal(acks.length, 40);
    if (process.env.CREDENCE_JS_DEBUG) console.log("unacked at stop", unackedAtStop, "duplicates", acks.filter((a) => a.duplicate).length, states);
    assert.equal(client.state, "open");
    assert.deepEqual(states.slice(0, 3), ["connecting", "open", "reconnecting"]);
    // Every change arrives exactly once, in order, with no gap: 41 events × … changes.
    const last = Math.max(...acks.map((a) => a.seq ?? 0));
    await until(() => seqs.length >= last, `notifications up to seq ${last}`);
    assert.deepEqual(seqs, Array.from({ length: last }, (_, i) => i + 1));
    const check = await client.beliefs("kai");
    assert.equal(check.beliefs.length, 40, "each resent event applied once");
  } finally {
    client.close();
    await sidecar.stop();
  }
});

test("JSON text frames work the same (encoding: json)", async () => {
  const sidecar = await startSidecar();
  const client = new CredenceClient({ url: sidecar.url, world: "town", subscribe: ["ana"], encoding: "json" });
  try {
    const notes = [];
    client.on("belief", (b) => notes.push(b));
    await client.connect();
    const ack = await client.send(observe("j-1", 2.5, ["ana"], "festival:day", 12));
    assert.equal(ack.changes, 1);
    assert.deepEqual(notes.map((n) => [n.root, n.value, n.day]), [["festival:day", 12, 2.5]]);
    const narrative = await client.narrative("ana", { budget: 300 });
    assert.equal(narrative.budget, 300);
    assert.ok(narrative.text.length <= 300);
  } finally {
    client.close();
    await sidecar.stop();
  }
});

test("promise and goal helpers: typed events, notifications and paged queries", async () => {
  const sidecar = await startSidecar();
  const client = new CredenceClient({ url: sidecar.url, world: "town", subscribe: "*" });
  try {
    const notes = [];
    client.on("belief", (b) => notes.push(b));
    await client.connect();
    await client.promise({
      event_id: "p-1", day: 1, promise: "fence", promiser: "bo", to: ["kai"],
      action: "mend_fence", subject: "mend the fence", by: 3,
    });
    await client.send({ kind: "tick", event_id: "t-1", day: 4 });
    const overdue = notes.find((n) => n.change === "promise" && n.resident === "kai" && n.value === "overdue");
    assert.equal(overdue.detail, "deadline");
    const page = await client.promises("kai", { state: "overdue" });
    assert.deepEqual(page.promises.map((p) => [p.promise, p.promiser, p.state]), [["fence", "bo", "overdue"]]);
    assert.equal(page.next, null);
    await client.goal({ event_id: "g-1", day: 4, resident: "kai", goal: "g", op: "set", subject: "build a raft" });
    await assert.rejects(
      client.goal({ event_id: "g-2", day: 4, resident: "kai", goal: "g", op: "set", subject: "again" }),
      (err) => err instanceof CredenceError && err.code === "invalid_event",
    );
    const goals = await client.goals("kai");
    assert.deepEqual(goals.goals.map((g) => [g.goal, g.state, g.history.length]), [["g", "active", 1]]);
  } finally {
    client.close();
    await sidecar.stop();
  }
});

test("graph pages: limit and after page a belief, graphPages walks them, joinGraphPages joins them", async () => {
  const sidecar = await startSidecar();
  const client = new CredenceClient({ url: sidecar.url, world: "town" });
  try {
    await client.connect();
    for (let n = 1; n <= 5; n++) {
      await client.send({
        kind: "say", event_id: `s-${n}`, day: n, speaker: `teller${n}`, listeners: ["mira"],
        claim: { root: "water:well", value: "poisoned" }, subject: { en: "The well is poisoned", "zh-Hant": "井水有毒" },
      });
    }
    const first = await client.graph({ resident: "mira", root: "water:well", limit: 2 });
    assert.deepEqual(first.nodes.filter((n) => n.type === "event").map((n) => n.event_id), ["s-1", "s-2"]);
    assert.equal(typeof first.next, "string");
    const claim = first.nodes.find((n) => n.type === "claim");
    assert.equal(claim.label, "The well is poisoned");
    assert.deepEqual(claim.subject, { en: "The well is poisoned", "zh-Hant": "井水有毒" });
    const second = await client.graph({ resident: "mira", root: "water:well", limit: 2, after: first.next });
    assert.deepEqual(second.nodes.filter((n) => n.type === "event").map((n) => n.event_id), ["s-3", "s-4"]);
    const pages = [];
    for await (const page of client.graphPages({ resident: "mira", root: "water:well", limit: 2 })) pages.push(page);
    assert.deepEqual(pages.map((p) => p.nodes.filter((n) => n.type === "event").length), [2, 2, 1]);
    assert.equal(pages[2].next, null);
    const whole = joinGraphPages(pages);
    assert.equal(whole.nodes.filter((n) => n.type === "claim").length, 1);
    const heard = whole.edges.filter((e) => e.type === "heard_from");
    assert.equal(heard.length, 5);
    assert.equal(whole.edges.filter((e) => e.type === "supports" || e.type === "inferred_from")
      .reduce((sum, e) => sum + e.count, 0), 5);
    await assert.rejects(
      client.graph({ resident: "mira", limit: 0 }),
      (err) => err instanceof CredenceError && err.code === "invalid_frame",
    );
  } finally {
    client.close();
    await sidecar.stop();
  }
});

test("trust pages: limit and after page a trust table, trustPages walks them, joinTrustPages joins them", async () => {
  const sidecar = await startSidecar();
  const client = new CredenceClient({ url: sidecar.url, world: "town" });
  try {
    await client.connect();
    for (const [n, source, topic] of [[1, "bo", undefined], [2, "bo", "well"], [3, "a:b", undefined], [4, "kai", undefined]]) {
      await client.setTrust({ event_id: `t-${n}`, day: n, resident: "mira", source, topic, value: 0.1 * n });
    }
    const first = await client.trust("mira", { limit: 2 });
    assert.deepEqual(first.entries.map((e) => [e.source, e.topic]), [["a:b", null], ["bo", null]]);
    assert.equal(first.next, "bo");
    const second = await client.trust("mira", { limit: 2, after: first.next });
    assert.deepEqual(second.entries.map((e) => [e.source, e.topic]), [["bo", "well"], ["kai", null]]);
    assert.equal(second.next, null);
    const pages = [];
    for await (const page of client.trustPages("mira", { limit: 1 })) pages.push(page);
    assert.equal(pages.length, 4);
    assert.deepEqual(joinTrustPages(pages).map((e) => e.history_total), [1, 1, 1, 1]);
    const bo = await client.trust("mira", "bo");
    assert.deepEqual(bo.entries.map((e) => e.topic), [null, "well"]);
    await assert.rejects(
      client.trust("mira", { after: "bo:" }),
      (err) => err instanceof CredenceError && err.code === "invalid_frame",
    );
  } finally {
    client.close();
    await sidecar.stop();
  }
});
