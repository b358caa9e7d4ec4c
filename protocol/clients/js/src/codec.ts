/**
 * The wire codec, strict per SPEC §3: one WebSocket message is one map, msgpack (binary) or
 * JSON (text). Inbound and outbound values obey the same rules: map keys are strings, text is
 * UTF-8 `str` (never `bin`), no ext types, integers within ±(2^53−1), floats finite, nesting
 * at most 16 levels. Strings are never normalised; compare them with `compareCodePoints`.
 *
 * Decoding uses `@msgpack/msgpack` twice over the same bytes: once as usual (so a `bin` value
 * shows up as a `Uint8Array`) and once with `rawStrings` (so every `str` value shows up as its
 * bytes, which are then decoded with a fatal UTF-8 decoder). The library's own string decoder
 * does not reject invalid UTF-8; this way nothing invalid gets through, at twice the decode cost.
 */
import { decode as mpDecode, encode as mpEncode, ExtData } from "@msgpack/msgpack";
import type { DecoderOptions } from "@msgpack/msgpack";

type KeyDecoder = NonNullable<DecoderOptions["keyDecoder"]>;

export const MAX_SAFE_INT = Number.MAX_SAFE_INTEGER; // 2^53 − 1
export const MAX_DEPTH = 16;

/** A message that breaks the value rules of SPEC §3 (the sidecar's code for it: bad_frame). */
export class FrameError extends Error {
  readonly code = "bad_frame";
  constructor(message: string) {
    super(message);
    this.name = "FrameError";
  }
}

export type Frame = { [key: string]: unknown; type: string };

const fatalUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function strictUtf8(bytes: Uint8Array, offset = 0, length = bytes.byteLength): string {
  try {
    return fatalUtf8.decode(bytes.subarray(offset, offset + length));
  } catch {
    throw new FrameError("msgpack str is not valid UTF-8");
  }
}

/** Map keys: always decoded strictly (the library's key cache would not check UTF-8). */
const strictKeys: KeyDecoder = {
  canBeCached: () => true,
  decode: (bytes: Uint8Array, offset: number, length: number) => strictUtf8(bytes, offset, length),
};

const onlyStringKeys = (key: unknown): string => {
  if (typeof key !== "string") throw new FrameError("map keys must be strings");
  return key;
};

const BASE: Partial<DecoderOptions> = {
  useBigInt64: true, // 64-bit integers come as bigint, so 2^53 is seen (and refused), not rounded
  mapKeyConverter: onlyStringKeys,
  keyDecoder: strictKeys,
};

function toSafeInt(value: bigint, path: string): number {
  if (value > BigInt(MAX_SAFE_INT) || value < -BigInt(MAX_SAFE_INT)) {
    throw new FrameError(`${path}: integer outside ±(2^53−1)`);
  }
  return Number(value);
}

/**
 * Walk the two decodings of one message together and return the checked value: `plain` has
 * strings and bins, `raw` has the bytes of every non-key string.
 */
function check(plain: unknown, raw: unknown, depth: number, path: string, json: boolean): unknown {
  if (depth > MAX_DEPTH) throw new FrameError(`${path}: nested deeper than ${MAX_DEPTH} levels`);
  if (plain === null || typeof plain === "boolean") return plain;
  if (typeof plain === "string") {
    return raw instanceof Uint8Array ? strictUtf8(raw) : plain;
  }
  if (typeof plain === "number") {
    if (!Number.isFinite(plain)) throw new FrameError(`${path}: NaN and infinity are not allowed`);
    // From msgpack a 64-bit integer arrives as a bigint (below), so a number here beyond
    // 2^53 was encoded as a float, which is allowed. JSON does not tell the two apart: refuse.
    if (json && Number.isInteger(plain) && Math.abs(plain) > MAX_SAFE_INT) {
      throw new FrameError(`${path}: integer outside ±(2^53−1)`);
    }
    return plain;
  }
  if (typeof plain === "bigint") return toSafeInt(plain, path);
  if (plain instanceof Uint8Array) {
    throw new FrameError(`${path}: binary (bin) values are not allowed; send text as str`);
  }
  if (plain instanceof ExtData || plain instanceof Date) {
    throw new FrameError(`${path}: msgpack ext types are not allowed`);
  }
  if (Array.isArray(plain)) {
    const rawList = Array.isArray(raw) ? raw : [];
    return plain.map((item, i) => check(item, rawList[i], depth + 1, `${path}[${i}]`, json));
  }
  if (typeof plain === "object") {
    const rawMap = (raw ?? {}) as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(plain as Record<string, unknown>)) {
      Object.defineProperty(out, key, {
        value: check(item, rawMap[key], depth + 1, `${path}.${key}`, json),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  throw new FrameError(`${path}: unsupported value type`);
}

function asFrame(value: unknown): Frame {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new FrameError("a frame must be a map");
  }
  if (typeof (value as { type?: unknown }).type !== "string") {
    throw new FrameError("every frame needs a string 'type'");
  }
  return value as Frame;
}

/** Decode one binary message: exactly one msgpack map, nothing after it, per SPEC §3. */
export function decodeMsgpack(data: Uint8Array | ArrayBuffer): Frame {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  let plain: unknown;
  let raw: unknown;
  try {
    plain = mpDecode(bytes, BASE);
    raw = mpDecode(bytes, { ...BASE, rawStrings: true });
  } catch (err) {
    if (err instanceof FrameError) throw err;
    throw new FrameError(`malformed msgpack: ${(err as Error).message}`);
  }
  if (plain === null || typeof plain !== "object" || Array.isArray(plain)) {
    throw new FrameError("a frame must be a map");
  }
  return asFrame(check(plain, raw, 0, "frame", false));
}

/** Decode one text message (the same map as JSON). */
export function decodeJson(text: string): Frame {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new FrameError("malformed JSON text frame");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new FrameError("a frame must be a map");
  }
  return asFrame(check(value, undefined, 0, "frame", true));
}

/** Decode a WebSocket message: binary is msgpack, a string is JSON. */
export function decodeFrame(message: Uint8Array | ArrayBuffer | string): Frame {
  return typeof message === "string" ? decodeJson(message) : decodeMsgpack(message);
}

/** Refuse anything an outbound frame must not hold (so a bad frame never leaves the game). */
export function checkOutbound(value: unknown, depth = 0, path = "frame"): void {
  if (depth > MAX_DEPTH) throw new FrameError(`${path}: nested deeper than ${MAX_DEPTH} levels`);
  if (value === null || value === undefined) return;
  switch (typeof value) {
    case "string":
    case "boolean":
      return;
    case "number":
      if (!Number.isFinite(value)) throw new FrameError(`${path}: NaN and infinity are not allowed`);
      if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
        throw new FrameError(`${path}: integer outside ±(2^53−1); send ids as strings`);
      }
      return;
    case "bigint":
      throw new FrameError(`${path}: bigint is not a protocol value; send ids as strings`);
    case "object":
      break;
    default:
      throw new FrameError(`${path}: unsupported value type ${typeof value}`);
  }
  if (value instanceof Uint8Array || ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
    throw new FrameError(`${path}: binary values are not allowed; send text as str`);
  }
  if (value instanceof Date || value instanceof Map || value instanceof Set) {
    throw new FrameError(`${path}: ${value.constructor.name} is not a protocol value`);
  }
  if (Array.isArray(value)) {
    value.forEach((item, i) => checkOutbound(item, depth + 1, `${path}[${i}]`));
    return;
  }
  for (const [key, item] of Object.entries(value)) checkOutbound(item, depth + 1, `${path}.${key}`);
}

/** Encode a frame as msgpack (strings as str, no ext, undefined fields left out). */
export function encodeMsgpack(frame: Frame): Uint8Array {
  checkOutbound(frame);
  return mpEncode(frame, { ignoreUndefined: true, forceFloat32: false, sortKeys: false });
}

/** Encode a frame as JSON text. */
export function encodeJson(frame: Frame): string {
  checkOutbound(frame);
  return JSON.stringify(frame);
}

/**
 * Compare two strings by Unicode code point, as the sidecar orders roots (`beliefs.after`).
 * JavaScript's default `<` compares UTF-16 code units, which orders U+FF5E after U+1F600.
 */
export function compareCodePoints(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done || y.done) return x.done ? (y.done ? 0 : -1) : 1;
    const cx = x.value.codePointAt(0)!;
    const cy = y.value.codePointAt(0)!;
    if (cx !== cy) return cx < cy ? -1 : 1;
  }
}

/** Whether two protocol values are equal: maps as maps, numbers by value, strings exactly. */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bl = b as unknown[];
    return a.length === bl.length && a.every((x, i) => sameValue(x, bl[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const keys = Object.keys(ao);
  return (
    keys.length === Object.keys(bo).length &&
    keys.every((k) => Object.prototype.hasOwnProperty.call(bo, k) && sameValue(ao[k], bo[k]))
  );
}
