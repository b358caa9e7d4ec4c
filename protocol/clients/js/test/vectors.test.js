// The codec against protocol/vectors/vectors.json: every valid vector decodes to its JSON,
// every encoding-level invalid one (error_code bad_frame) is refused, as SPEC §3 says.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./sidecar.js";
import {
  FrameError, checkOutbound, compareCodePoints, decodeMsgpack, decodeJson, encodeMsgpack, sameValue,
} from "../dist/index.js";

const vectors = JSON.parse(readFileSync(join(ROOT, "protocol/vectors/vectors.json"), "utf8"));
const bytes = (hex) => Uint8Array.from(Buffer.from(hex, "hex"));

test("every valid vector decodes to its JSON value", () => {
  const valid = vectors.filter((v) => v.valid && v.json !== null);
  assert.ok(valid.length > 80);
  for (const v of valid) {
    const frame = decodeMsgpack(bytes(v.msgpack_hex));
    assert.ok(sameValue(frame, v.json), `${v.name}: ${JSON.stringify(frame)}`);
  }
});

test("integers of 64-bit width and ±(2^53−1) decode exactly as numbers", () => {
  const max = vectors.find((v) => v.name === "client.event.int_max_safe");
  const frame = decodeMsgpack(bytes(max.msgpack_hex));
  assert.equal(frame.claim.value, Number.MAX_SAFE_INTEGER);
  const wide = vectors.find((v) => v.name === "client.beliefs.wide_encodings");
  assert.ok(sameValue(decodeMsgpack(bytes(wide.msgpack_hex)), wide.json));
});

test("every encoding-level invalid vector is refused with FrameError", () => {
  const bad = vectors.filter((v) => !v.valid && v.error_code === "bad_frame");
  assert.ok(bad.length >= 15, `${bad.length} bad_frame vectors`);
  for (const v of bad) {
    assert.throws(() => decodeMsgpack(bytes(v.msgpack_hex)), FrameError, v.name);
  }
});

test("a float beyond 2^53 is a float, not an out-of-range integer", () => {
  // {"type": "x", "f": 1e20} with f as float 64 (cb): allowed; as uint 64 (cf) it is refused.
  const asFloat = Uint8Array.from(Buffer.from("82a474797065a178a166cb4415af1d78b58c40", "hex"));
  assert.equal(decodeMsgpack(asFloat).f, 1e20);
  const asInt = Uint8Array.from(Buffer.from("82a474797065a178a166cf0020000000000000", "hex"));
  assert.throws(() => decodeMsgpack(asInt), FrameError);
});

test("field-level invalid vectors are well-formed frames (the sidecar refuses their fields)", () => {
  const fieldLevel = vectors.filter((v) => !v.valid && v.error_code !== "bad_frame" && v.msgpack_hex);
  for (const v of fieldLevel) decodeMsgpack(bytes(v.msgpack_hex));
});

test("every valid client vector survives encode then decode", () => {
  for (const v of vectors.filter((x) => x.direction === "client" && x.valid && x.json !== null)) {
    const again = decodeMsgpack(encodeMsgpack(v.json));
    assert.ok(sameValue(again, v.json), v.name);
  }
});

test("most canonical client vectors encode byte for byte", () => {
  // Not all: this encoder writes whole floats (day 4.0) as integers, which SPEC §3 allows.
  let same = 0;
  for (const v of vectors.filter((x) => x.direction === "client" && x.valid && x.canonical && x.json)) {
    if (Buffer.from(encodeMsgpack(v.json)).toString("hex") === v.msgpack_hex) same += 1;
  }
  assert.ok(same >= 20, `${same} client vectors encode to the same bytes`);
});

test("the encoder refuses what SPEC §3 forbids", () => {
  const frame = (value) => ({ type: "beliefs", resident: value });
  assert.throws(() => encodeMsgpack(frame(new Uint8Array([1]))), FrameError);
  assert.throws(() => encodeMsgpack(frame(2 ** 53)), FrameError);
  assert.throws(() => encodeMsgpack(frame(NaN)), FrameError);
  assert.throws(() => encodeMsgpack(frame(10n)), FrameError);
  assert.throws(() => encodeMsgpack(frame(new Date())), FrameError);
  assert.doesNotThrow(() => checkOutbound(frame(Number.MAX_SAFE_INTEGER)));
  const data = encodeMsgpack(frame("mira"));
  assert.equal(data[0], 0x82);
  assert.ok(!Buffer.from(data).includes(0xc4), "text is str, never bin");
});

test("JSON text frames follow the same rules", () => {
  assert.deepEqual(decodeJson('{"type":"ack","seq":3}'), { type: "ack", seq: 3 });
  assert.throws(() => decodeJson("[1]"), FrameError);
  assert.throws(() => decodeJson('{"seq":1}'), FrameError);
  assert.throws(() => decodeJson('{"type":"x","n":9007199254740993}'), FrameError);
});

test("strings order by code point, not UTF-16 unit", () => {
  const roots = ["\u{1F600}", "\uFF5E", "a", "é", "e\u0301"];
  const sorted = [...roots].sort(compareCodePoints);
  assert.deepEqual(sorted, ["a", "e\u0301", "é", "\uFF5E", "\u{1F600}"]);
  assert.equal(compareCodePoints("é", "e\u0301") === 0, false, "no normalisation");
});
