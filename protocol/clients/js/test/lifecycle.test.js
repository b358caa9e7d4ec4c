// The newer frames through CredenceClient against real sidecars: register (names in the
// narrative), schema (ack warnings, schema_violation), the world lifecycle (worlds, fork,
// delete), and misremembered notifications; the convenience methods send what the vectors say.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { WebSocket } from "ws";
import { ROOT, startSidecar } from "./sidecar.js";
import { CredenceClient, CredenceError, decodeFrame, misremembered, sameValue } from "../dist/index.js";

const vectors = JSON.parse(readFileSync(join(ROOT, "protocol/vectors/vectors.json"), "utf8"));
const vector = (name) => vectors.find((v) => v.name === name).json;
const observe = (event_id, day, witnesses, root, value, subject = `${root} is ${value}`, extra = {}) =>
  ({ kind: "observe", event_id, day, witnesses, claim: { root, value }, subject, ...extra });

/** A real `ws` socket that also keeps every frame the client wrote, decoded. */
function recording(sent) {
  return (url) => {
    const ws = new WebSocket(url);
    const send = ws.send.bind(ws);
    ws.send = (data) => {
      sent.push(decodeFrame(typeof data === "string" ? data : new Uint8Array(data)));
      send(data);
    };
    return ws;
  };
}

test("register: the narrative names residents; schema: warnings and schema_violation", async () => {
  const sidecar = await startSidecar();
  const client = new CredenceClient({ url: sidecar.url, world: "town" });
  try {
    await client.connect();
    const reg = await client.register({
      event_id: "g-1", day: 1,
      residents: [
        { resident: "mira", names: { en: "Mira", "zh-Hant": "米拉" } },
        { resident: "kai", names: { en: "Kai" } },
      ],
      actions: [{ action: "fetch_water", names: { en: "fetch water", "zh-Hant": "打水" } }],
    });
    assert.equal(reg.type, "ack");
    assert.equal(reg.changes, 0);
    assert.equal(reg.warnings, undefined);
    await client.send({
      kind: "say", event_id: "s-1", day: 1, speaker: "mira", listeners: ["kai"],
      claim: { root: "water:well", value: "poisoned" }, subject: "the well is poisoned",
    });
    const en = await client.narrative("kai");
    assert.match(en.text, /Mira/, en.text);
    assert.doesNotMatch(en.text, /\bmira\b/, en.text);
    const zh = await client.narrative("kai", { lang: "zh-Hant" });
    assert.match(zh.text, /米拉/, zh.text);
    // A registered resident with no beliefs yet has an empty narrative, not not_found.
    await client.register({ event_id: "g-2", day: 1, residents: [{ resident: "lena", names: { en: "Lena" } }] });
    const lena = await client.narrative("lena");
    assert.equal(lena.type, "narrative");
    // Names in a language the narrative does not speak: refused whole.
    await assert.rejects(
      client.register({ event_id: "g-3", day: 1, residents: [{ resident: "bo", names: { fr: "Bo" } }] }),
      (err) => err instanceof CredenceError && err.code === "invalid_event" && err.eventId === "g-3",
    );

    const schema = await client.declareSchema({
      event_id: "sc-1", day: 2, undeclared: "warn",
      roots: [
        { prefix: "water:well", values: ["clean", "poisoned"], text: { en: "the well water" }, importance: 0.5 },
        { prefix: "location:", mutable: true },
      ],
    });
    assert.deepEqual([schema.type, schema.changes, schema.warnings], ["ack", 0, undefined]);
    const warned = await client.send(observe("sc-2", 2, ["kai"], "weather:today", "rain"));
    assert.equal(warned.changes, 1);
    assert.ok(Array.isArray(warned.warnings) && warned.warnings.length === 1, JSON.stringify(warned));
    assert.match(warned.warnings[0], /weather:today/);
    const declared = await client.send(observe("sc-3", 2, ["kai"], "water:well", "clean"));
    assert.equal(declared.warnings, undefined);
    await assert.rejects(
      client.send(observe("sc-4", 2, ["kai"], "water:well", "poisond")),
      (err) => err instanceof CredenceError && err.code === "schema_violation"
        && err.reason === "value_not_allowed" && err.eventId === "sc-4",
    );
    // Nothing of the refused event was stored: its id is free for the corrected event.
    const fixed = await client.send(observe("sc-4", 2, ["kai"], "water:well", "poisoned"));
    assert.equal(fixed.duplicate, false);
    // A schema that refuses undeclared roots.
    await client.declareSchema({ event_id: "sc-5", day: 2, undeclared: "refuse", roots: [{ prefix: "water:" }] });
    await assert.rejects(
      client.send(observe("sc-6", 2, ["kai"], "weather:today", "sun")),
      (err) => err.code === "schema_violation" && err.reason === "undeclared_root",
    );
  } finally {
    client.close();
    await sidecar.stop();
  }
});

test("worlds, fork and deleteWorld manage save slots", async () => {
  const sidecar = await startSidecar();
  const client = new CredenceClient({ url: sidecar.url, world: "town" });
  try {
    await client.connect();
    for (let i = 1; i <= 4; i++) await client.send(observe(`w-${i}`, i, ["mira"], `r:${i}`, i));
    const before = await client.worlds();
    assert.deepEqual(before.worlds.map((w) => [w.world, w.events]), [["town", 4]]);
    const forked = await client.fork("town-slot-1", 2);
    assert.equal(forked.type, "forked");
    assert.deepEqual(
      [forked.world, forked.source, forked.at, forked.events, forked.day, forked.residents, forked.beliefs],
      ["town-slot-1", "town", 2, 2, 2, 1, 2],
    );
    const whole = await client.fork("town-copy");
    assert.deepEqual([whole.at, whole.events, whole.beliefs], [null, 4, 4]);
    const listed = await client.worlds();
    assert.deepEqual(listed.worlds.map((w) => [w.world, w.events]), [["town", 4], ["town-copy", 4], ["town-slot-1", 2]]);
    assert.equal(listed.next, null);
    const first = await client.worlds({ limit: 2 }); // a page at a time: limit, then after next
    assert.deepEqual([first.worlds.map((w) => w.world), first.next], [["town", "town-copy"], "town-copy"]);
    const second = await client.worlds({ after: first.next, limit: 2 });
    assert.deepEqual([second.worlds.map((w) => w.world), second.next], [["town-slot-1"], null]);
    // The fork is a world of its own: its beliefs were rebuilt from the first two events.
    const slot = new CredenceClient({ url: sidecar.url, world: "town-slot-1" });
    await slot.connect();
    const beliefs = await slot.beliefs("mira");
    assert.deepEqual(beliefs.beliefs.map((b) => b.root), ["r:1", "r:2"]);
    slot.close();
    await assert.rejects(client.fork("town-copy"), (err) => err.code === "invalid_frame");
    const deleted = await client.deleteWorld("town-slot-1");
    assert.deepEqual([deleted.type, deleted.world, deleted.events], ["deleted", "town-slot-1", 2]);
    const after = await client.worlds();
    assert.deepEqual(after.worlds.map((w) => w.world), ["town", "town-copy"]);
    await assert.rejects(client.deleteWorld("town-slot-1"), (err) => err.code === "not_found");
    assert.equal(client.state, "open");
  } finally {
    client.close();
    await sidecar.stop();
  }
});

test("a reader may list worlds but not fork or delete", async () => {
  const sidecar = await startSidecar({ args: ["--token", "town=w-secret", "--read-token", "town=r-secret"] });
  const reader = new CredenceClient({ url: sidecar.url, world: "town", token: "r-secret" });
  try {
    await reader.connect();
    assert.equal(reader.welcome.role, "reader");
    assert.ok(Array.isArray((await reader.worlds()).worlds));
    await assert.rejects(reader.fork("town-2"), (err) => err.code === "forbidden");
    await assert.rejects(reader.deleteWorld("town"), (err) => err.code === "forbidden");
  } finally {
    reader.close();
    await sidecar.stop();
  }
});

test("misremembered notifications are typed and their detail decoded", async () => {
  const sidecar = await startSidecar({ args: ["--misremember", "1", "--seed", "3"] });
  const client = new CredenceClient({ url: sidecar.url, world: "town", subscribe: ["mira"] });
  try {
    const notes = [];
    client.on("belief", (b) => notes.push(b));
    await client.connect();
    for (const day of [1, 2, 3]) {
      await client.send(observe(`m-${day}`, day, ["mira"], "key:where", "counter", "the key is on the counter",
        { places: [`spot${day}`] }));
    }
    const drifts = notes.filter((n) => n.change === "misremembered");
    assert.equal(drifts.length, 2, JSON.stringify(notes.map((n) => n.change)));
    for (const n of drifts) {
      assert.equal(n.value, "counter"); // never the value
      const d = misremembered(n);
      assert.ok(d !== null, n.detail);
      assert.ok(["places", "people", "remembered_day"].includes(d.field));
      assert.notDeepEqual(d.before, d.after);
    }
    assert.equal(misremembered(notes[0]), null, "a formed change has no drift");
    assert.equal(client.mirror.get("mira", "key:where").value, "counter");
  } finally {
    client.close();
    await sidecar.stop();
  }
});

test("the convenience methods send the frames of the vectors", async () => {
  const sidecar = await startSidecar();
  const sent = [];
  const client = new CredenceClient({ url: sidecar.url, world: "town", socket: recording(sent) });
  try {
    await client.connect();
    const reg = vector("client.event.register");
    await client.register({ event_id: reg.event_id, day: reg.day, residents: reg.residents });
    const schema = vector("client.event.schema");
    await client.declareSchema({ event_id: schema.event_id, day: schema.day, undeclared: schema.undeclared, roots: schema.roots });
    await client.worlds();
    await client.fork(vector("client.fork").into, vector("client.fork").at);
    await client.deleteWorld(vector("client.delete").world);
    const withoutRid = (f) => {
      const { rid, ...rest } = f;
      return rest;
    };
    const got = sent.filter((f) => f.type !== "hello").map(withoutRid);
    const want = ["client.event.register", "client.event.schema", "client.worlds", "client.fork", "client.delete"]
      .map((n) => withoutRid(vector(n)));
    assert.equal(got.length, want.length);
    for (let i = 0; i < want.length; i++) assert.ok(sameValue(got[i], want[i]), `${JSON.stringify(got[i])} vs ${JSON.stringify(want[i])}`);
  } finally {
    client.close();
    await sidecar.stop();
  }
});

/** A sidecar serving its one connection (`--max-connections 1`) to `first`, connected, and
 * `second` (with `options`) not connected yet; `body(sidecar, first, second)`, then all closed. */
async function withFullSidecar(options, body) {
  const sidecar = await startSidecar({ args: ["--max-connections", "1"] });
  const first = new CredenceClient({ url: sidecar.url, world: "town" });
  const second = new CredenceClient({ url: sidecar.url, world: "town", ...options });
  try {
    await first.connect();
    await body(sidecar, first, second);
  } finally {
    first.close();
    second.close();
    await sidecar.stop();
  }
}

test("a connection refused 503 (the sidecar is full) is tried again and welcomed once there is room", async () => {
  await withFullSidecar({ minDelayMs: 50, maxDelayMs: 200 }, async (sidecar, first, second) => {
    const health = await (await fetch(sidecar.url.replace("ws://", "http://") + "/")).json();
    assert.deepEqual([health.connections, health.max_connections], [1, 1]);
    const states = [];
    second.on("state", (s) => states.push(s));
    const welcomed = second.connect();
    await new Promise((done) => setTimeout(done, 400)); // refused, and tried again meanwhile
    assert.ok(states.includes("reconnecting"), `states: ${states}`);
    first.close();
    const welcome = await welcomed;
    assert.equal(welcome.world, "town");
  });
});

test("close() while connect() waits between attempts rejects it with closed (a game bounds the wait so)", async () => {
  await withFullSidecar({ minDelayMs: 300, maxDelayMs: 300 }, async (_sidecar, _first, waiting) => {
    const connecting = waiting.connect();
    await new Promise((done) => setTimeout(done, 150)); // refused 503, sleeping before the next try
    assert.equal(waiting.state, "reconnecting");
    waiting.close();
    const outcome = await Promise.race([
      connecting.then(() => "welcomed", (err) => err),
      new Promise((done) => setTimeout(() => done("still waiting"), 2000)),
    ]);
    assert.ok(outcome instanceof CredenceError, `connect() after close(): ${outcome}`);
    assert.equal(outcome.code, "closed");
    assert.equal(waiting.state, "closed");
  });
});
