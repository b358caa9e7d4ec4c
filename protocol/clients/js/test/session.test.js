// Replay the scripted session of protocol/vectors through CredenceClient against a real
// sidecar on an empty database: every server vector of the session must arrive, as is.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, startSidecar, until } from "./sidecar.js";
import { CredenceClient, sameValue } from "../dist/index.js";

const vectors = JSON.parse(readFileSync(join(ROOT, "protocol/vectors/vectors.json"), "utf8"));
const bytes = (hex) => Uint8Array.from(Buffer.from(hex, "hex"));
// Error frames the session does not reach (built literally by the generator).
const LITERAL = new Set([
  "server.error.hello_required", "server.error.unsupported_protocol", "server.error.unauthorized",
  "server.error.forbidden", "server.error.slow_consumer", "server.error.too_large",
  "server.error.internal_error", "server.error.shutting_down", "server.error.limit_exceeded",
  "server.error.clock_backwards", "server.error.world_busy",
]);

test("the scripted session replays frame for frame", async () => {
  const sidecar = await startSidecar();
  const received = [];
  try {
    const one = new CredenceClient({ url: sidecar.url, world: "town", subscribe: "*", reconnect: false });
    one.on("frame", (f) => received.push(f));
    const welcome = await one.connect();
    assert.equal(welcome.seq, 0);
    for (const v of vectors.filter((x) => x.direction === "client" && x.context === "session")) {
      one.sendRaw(bytes(v.msgpack_hex));
      await one.sync(); // the session waits for each reply before the next frame
    }
    one.close();

    const hello = vectors.find((v) => v.name === "client.hello.resume").json;
    const two = new CredenceClient({
      url: sidecar.url, world: "town", token: hello.token, subscribe: hello.subscribe,
      resumeFrom: hello.resume, reconnect: false,
    });
    let resumed = null;
    two.on("frame", (f) => received.push(f));
    two.on("resumed", (r) => (resumed = r));
    await two.connect();
    await until(() => resumed !== null, "resumed");
    two.close();
  } finally {
    await sidecar.stop();
  }
  const expected = vectors.filter((v) => v.direction === "server" && !LITERAL.has(v.name));
  assert.ok(expected.length > 30, `${expected.length} session server vectors`);
  const missing = [];
  for (const v of expected) {
    const want = v.name === "server.welcome" ? strip(v.json, ["rid", "server"]) : v.json;
    const found = received.some((f) =>
      sameValue(v.name === "server.welcome" ? strip(f, ["rid", "server"]) : f, want));
    if (!found) missing.push(v.name);
  }
  assert.deepEqual(missing, [], `server vectors not received: ${missing.join(", ")}`);
});

function strip(frame, keys) {
  const out = { ...frame };
  for (const k of keys) delete out[k];
  return out;
}
