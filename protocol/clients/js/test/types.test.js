// The TypeScript types against the vectors: every valid vector of a frame type the client
// types (the sidecar's replies and notifications; events, register, schema and the world
// lifecycle frames) is written into a .ts file as a value of its type, and tsc checks it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, tempDir } from "./sidecar.js";

const JS = join(ROOT, "protocol/clients/js");
const vectors = JSON.parse(readFileSync(join(ROOT, "protocol/vectors/vectors.json"), "utf8"));

const SERVER = {
  ack: "Ack", belief: "BeliefNotification", beliefs: "BeliefsReply", deleted: "DeletedReply",
  distribution: "DistributionReply", error: "ErrorFrame", explanation: "ExplanationReply",
  forked: "ForkedReply", graph: "GraphReply", narrative: "NarrativeReply", resumed: "Resumed",
  trust: "TrustReply", welcome: "Welcome", worlds: "WorldsReply",
};
const CLIENT = {
  event: "EventFrame", register: "RegisterFrame", schema: "SchemaFrame", worlds: "WorldsFrame",
  fork: "ForkFrame", delete: "DeleteFrame",
};

// Nil for an absent optional field is the sidecar's tolerance (SPEC §3: absent = nil); the types describe
// what a game writes, so they leave nil out of optional event fields.
const NIL_OPTIONALS = new Set(["client.event.nil_optionals", "client.event.unknown_keys"]);

test("every valid vector of a typed frame is a value of its TypeScript type", () => {
  const lines = [
    `import type * as C from ${JSON.stringify(join(JS, "dist/index.js"))};`,
    // U extends T: the literal keeps its literal types, and extra keys (allowed by SPEC §4) pass.
    "const is = <T>() => <U extends T>(value: U): U => value;",
  ];
  const names = { server: 0, client: 0 };
  for (const v of vectors) {
    if (!v.valid || typeof v.json !== "object" || v.json === null || Array.isArray(v.json)) continue;
    const type = (v.direction === "server" ? SERVER : CLIENT)[v.json.type];
    if (type === undefined || NIL_OPTIONALS.has(v.name)) continue;
    names[v.direction] += 1;
    lines.push(`// ${v.name}\nis<C.${type}>()(${JSON.stringify(v.json)});`);
  }
  for (const name of NIL_OPTIONALS) assert.ok(vectors.some((v) => v.name === name), name);
  assert.ok(names.server > 50 && names.client > 30, JSON.stringify(names));
  for (const kind of ["register", "schema", "worlds", "fork", "delete"]) {
    assert.ok(lines.some((l) => l.includes(`is<C.${CLIENT[kind]}>`)), `a ${kind} vector is checked`);
  }
  const dir = tempDir("credence-types-");
  const file = join(dir, "vectors.ts");
  writeFileSync(file, lines.join("\n") + "\n");
  const tsc = spawnSync(
    process.execPath,
    [join(JS, "node_modules/typescript/bin/tsc"), "--noEmit", "--strict", "--target", "ES2020",
      "--module", "ES2020", "--moduleResolution", "bundler", "--skipLibCheck", "--types", "node", file],
    { cwd: JS, encoding: "utf8" },
  );
  assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
});
