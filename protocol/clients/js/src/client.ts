/**
 * `CredenceClient`: one logical connection to a Credence sidecar that survives disconnects.
 *
 * What it owns (SPEC §5–§14): the `hello` (token, subscription, resume point); `send(event)`
 * returning a promise of its `ack`; automatic reconnect with backoff, resuming notifications
 * after the last seq received and resending every unacknowledged event under its own
 * `event_id` (the sidecar acks a stored one as a duplicate, so nothing is applied twice);
 * queries whose paged replies are joined; typed notifications; a local mirror of subscribed
 * beliefs; and backpressure: `send` waits while too many events are unacknowledged or the
 * socket's buffer is full.
 */
import {
  type Frame,
  FrameError,
  compareCodePoints,
  decodeFrame,
  encodeJson,
  encodeMsgpack,
} from "./codec.js";
import {
  type Ack,
  type BeliefNotification,
  type BeliefsFilter,
  type BeliefsReply,
  type ClaimValue,
  type Texts,
  type DeletedReply,
  type DistributionReply,
  type ErrorFrame,
  type ExplanationReply,
  type ForkedReply,
  type GoalEvent,
  type GoalState,
  type GoalsReply,
  type GraphOptions,
  type GraphReply,
  type NarrativeOptions,
  type NarrativeReply,
  type PageOptions,
  type TrustOptions,
  type PromiseEvent,
  type PromiseState,
  type PromisesReply,
  type RegisterEvent,
  type Resumed,
  type Rid,
  type SchemaEvent,
  type SubscribeFilter,
  type TrustReply,
  type Welcome,
  type WorldEvent,
  type WorldsReply,
  FATAL_CLOSE_CODES,
  PAGED_FIELDS,
} from "./frames.js";

/** An `error` frame from the sidecar, or a local refusal (codes as in SPEC §12). */
export class CredenceError extends Error {
  readonly code: string;
  readonly reason?: string;
  readonly eventId?: string;
  readonly frame?: ErrorFrame;
  constructor(code: string, message: string, frame?: ErrorFrame) {
    super(`${code}: ${message}`);
    this.name = "CredenceError";
    this.code = code;
    this.frame = frame;
    this.reason = frame?.reason;
    this.eventId = frame?.event_id;
  }
}

/** The subset of the WebSocket API used here; both the browser's and `ws` provide it. */
export interface SocketLike {
  binaryType: string;
  readonly bufferedAmount: number;
  readonly readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
}
export type SocketFactory = (url: string) => SocketLike;

export interface ClientOptions {
  /**
   * `ws://host:port` of the sidecar (`credence serve` prints it as `CREDENCE_URL=…`), or a
   * function asked before every connection attempt (e.g. `() => sidecar.url` of a
   * `SidecarProcess`, whose URL may change when it restarts).
   */
  url: string | (() => string);
  /** The world (save game, shard) this connection reads and writes; 1–200 characters. */
  world: string;
  /** Writer or reader token (sent in `hello.token`); omit for a sidecar in open mode. */
  token?: string;
  /** Residents whose belief notifications to receive from the start (and to resume). */
  subscribe?: string[] | "*";
  /** Resume after this change seq on the first connection too (default: live only). */
  resumeFrom?: number;
  /** Free text for the sidecar's log. */
  clientName?: string;
  /** `msgpack` (binary, default) or `json` (text frames). */
  encoding?: "msgpack" | "json";
  /** Reconnect automatically (default true) with exponential backoff between these bounds. */
  reconnect?: boolean;
  minDelayMs?: number;
  maxDelayMs?: number;
  /** Most events awaiting their ack before `send` waits (default 256). */
  maxInFlight?: number;
  /** Bytes buffered in the socket before `send` waits (default 1 MiB). */
  highWaterBytes?: number;
  /** Keep a local mirror of the beliefs of subscribed residents (default true). */
  mirror?: boolean;
  /** A WebSocket factory; default: the global `WebSocket` (browsers, Node ≥ 22) or `ws`. */
  socket?: SocketFactory;
}

export type ConnectionState = "connecting" | "open" | "reconnecting" | "closed";

type Listener<T> = (value: T) => void;
interface Events {
  belief: BeliefNotification;
  welcome: Welcome;
  resumed: Resumed;
  /** An error frame that answers no pending request (e.g. a fatal one before close). */
  error: ErrorFrame | CredenceError;
  state: ConnectionState;
  close: { code: number; reason: string };
  /** Every decoded frame, before the client handles it. */
  frame: Frame;
}

interface Pending {
  frame: Frame;
  resolve: (value: Frame) => void;
  reject: (error: unknown) => void;
  parts: Frame[];
  eventId?: string;
}

/** The local mirror: the latest known state of each (resident, root). */
export interface MirroredBelief {
  resident: string;
  root: string;
  value: ClaimValue;
  confidence: number;
  state: string;
  source_kind: string;
  source: string | null;
  subject: Texts | null;
  /** The seq of the change that set it (0 when it came from a `beliefs` query). */
  seq: number;
}

export class BeliefMirror {
  private readonly byResident = new Map<string, Map<string, MirroredBelief>>();
  private readonly touched = new Map<string, Set<string>>(); // changes seen while loading

  apply(note: BeliefNotification): void {
    this.set({
      resident: note.resident, root: note.root, value: note.value, confidence: note.confidence,
      state: note.state, source_kind: note.source_kind, source: note.source,
      subject: note.subject, seq: note.seq,
    });
    this.touched.get(note.resident)?.add(note.root);
  }

  private set(b: MirroredBelief): void {
    let roots = this.byResident.get(b.resident);
    if (!roots) this.byResident.set(b.resident, (roots = new Map()));
    roots.set(b.root, b);
  }

  /** @internal Mark the start of a `beliefs` load, so newer notifications win over it. */
  beginLoad(resident: string): void {
    this.touched.set(resident, new Set());
  }

  /** @internal Seed from a `beliefs` reply; roots notified meanwhile keep the newer state. */
  endLoad(reply: BeliefsReply): void {
    const skip = this.touched.get(reply.resident) ?? new Set<string>();
    this.touched.delete(reply.resident);
    for (const b of reply.beliefs) {
      if (skip.has(b.root)) continue;
      this.set({
        resident: b.resident, root: b.root, value: b.value, confidence: b.confidence,
        state: b.state, source_kind: b.source_kind, source: b.source, subject: b.subject, seq: 0,
      });
    }
  }

  get(resident: string, root: string): MirroredBelief | undefined {
    return this.byResident.get(resident)?.get(root);
  }

  /** One resident's beliefs in root order (by code point, as the sidecar orders them). */
  beliefs(resident: string): MirroredBelief[] {
    const roots = this.byResident.get(resident);
    return roots ? [...roots.values()].sort((a, b) => compareCodePoints(a.root, b.root)) : [];
  }

  residents(): string[] {
    return [...this.byResident.keys()].sort(compareCodePoints);
  }
}

async function defaultSocket(): Promise<SocketFactory> {
  const global = (globalThis as { WebSocket?: new (url: string) => SocketLike }).WebSocket;
  if (global) return (url) => new global(url);
  const mod = (await import("ws")) as unknown as { WebSocket: new (url: string) => SocketLike };
  return (url) => new mod.WebSocket(url);
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class CredenceClient {
  readonly options: Required<Omit<ClientOptions, "token" | "subscribe" | "resumeFrom" | "socket">> &
    Pick<ClientOptions, "token" | "subscribe" | "resumeFrom" | "socket">;
  readonly mirror = new BeliefMirror();
  /** The last change seq received (belief, resumed or the first welcome): where a resume starts. */
  lastSeq: number | undefined;
  welcome: Welcome | undefined;
  state: ConnectionState = "closed";

  private ws: SocketLike | undefined;
  private factory: SocketFactory | undefined;
  private readonly listeners = new Map<keyof Events, Set<Listener<never>>>();
  private readonly pending = new Map<string, Pending>(); // by rid, in send order
  private readonly unacked = new Map<string, Pending>(); // events by event_id, in send order
  /** The connection's filters as the sidecar holds them (SPEC §8.2–8.3), to restore. */
  private filters: SubscribeFilter[] = [];
  /** Residents an `unsubscribe` excluded from the `"*"` filters. */
  private readonly excluded = new Set<string>();
  private hellos = 0;
  private nextRid = 1;
  private room: Array<() => void> = [];
  private reserved = 0;
  private poll: ReturnType<typeof setInterval> | undefined;
  private connected: { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void };
  private closing = false;
  private attempt = 0;

  constructor(options: ClientOptions) {
    this.options = {
      encoding: "msgpack", reconnect: true, minDelayMs: 200, maxDelayMs: 5000,
      maxInFlight: 256, highWaterBytes: 1 << 20, mirror: true, clientName: "credence-js/0.1.0",
      ...options,
    };
    this.lastSeq = options.resumeFrom;
    if (options.subscribe) this.filters.push({ residents: options.subscribe });
    this.connected = this.deferred();
  }

  // ------------------------------------------------------------------ events

  on<K extends keyof Events>(kind: K, fn: Listener<Events[K]>): () => void {
    let set = this.listeners.get(kind);
    if (!set) this.listeners.set(kind, (set = new Set()));
    set.add(fn as Listener<never>);
    return () => set!.delete(fn as Listener<never>);
  }

  private emit<K extends keyof Events>(kind: K, value: Events[K]): void {
    for (const fn of this.listeners.get(kind) ?? []) (fn as Listener<Events[K]>)(value);
  }

  // ------------------------------------------------------------------ lifecycle

  /** Open the connection; resolves after the first `welcome` (rejects on a fatal refusal). */
  async connect(): Promise<Welcome> {
    this.closing = false;
    this.factory ??= this.options.socket ?? (await defaultSocket());
    this.open();
    await this.connected.promise;
    return this.welcome!;
  }

  /** Close for good; pending promises reject with `closed`, and so does a `connect()` still
   * waiting for its first welcome (also between two attempts: how a game bounds the wait). */
  close(): void {
    this.closing = true;
    const error = new CredenceError("closed", "the client was closed");
    this.ws?.close(1000, "client closed");
    if (this.welcome === undefined) this.connected.reject(error);
    this.failAll(error);
    this.setState("closed");
  }

  private deferred() {
    let resolve!: () => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
    promise.catch(() => undefined); // observed through connect(); never an unhandled rejection
    return { promise, resolve, reject };
  }

  private setState(state: ConnectionState): void {
    if (this.state !== state) {
      this.state = state;
      this.emit("state", state);
    }
  }

  private open(): void {
    this.setState(this.attempt === 0 ? "connecting" : "reconnecting");
    const url = typeof this.options.url === "function" ? this.options.url() : this.options.url;
    const ws = this.factory!(url);
    this.ws = ws;
    ws.binaryType = "arraybuffer";
    let welcomed = false;
    ws.onopen = () => {
      const hello: Frame = {
        type: "hello", protocol: 1, world: this.options.world, client: this.options.clientName,
      };
      if (this.options.token) hello.token = this.options.token;
      if (this.hellos++ === 0) {
        if (this.options.subscribe) hello.subscribe = this.options.subscribe;
      } else if (this.filters.length > 0) {
        // Every filter the sidecar held, so the backlog is read through all of them (SPEC §9).
        hello.filters = this.filters.map((f) => ({ ...f }));
      }
      if (this.lastSeq !== undefined && this.filters.length > 0) hello.resume = this.lastSeq;
      this.write(hello);
      // Exclusions from "*" filters have no place in a hello: restore them at once (the
      // backlog's notifications about them are dropped in dispatch()).
      if (this.hellos > 1 && this.excluded.size > 0) {
        this.write({ type: "unsubscribe", residents: [...this.excluded], rid: "credence-js:excluded" });
      }
    };
    ws.onmessage = (ev) => {
      let frame: Frame;
      try {
        const data = ev.data;
        frame = decodeFrame(
          typeof data === "string" ? data : data instanceof ArrayBuffer ? data : new Uint8Array(data as ArrayBufferLike),
        );
      } catch (err) {
        this.emit("error", err instanceof FrameError
          ? new CredenceError("bad_frame", err.message) : new CredenceError("bad_frame", String(err)));
        return;
      }
      this.emit("frame", frame);
      if (frame.type === "welcome") {
        welcomed = true;
        this.onWelcome(frame as unknown as Welcome);
      } else {
        this.dispatch(frame);
      }
    };
    ws.onerror = () => undefined; // a close follows
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.emit("close", { code: ev.code, reason: ev.reason });
      this.wakeSenders();
      const fatal = FATAL_CLOSE_CODES.has(ev.code);
      if (this.closing || fatal || !this.options.reconnect) {
        const error = new CredenceError(ev.reason || "closed", `connection closed (${ev.code})`);
        if (!welcomed) this.connected.reject(error);
        this.failAll(error);
        this.setState("closed");
        return;
      }
      this.setState("reconnecting");
      const delay = Math.min(this.options.maxDelayMs, this.options.minDelayMs * 2 ** this.attempt);
      this.attempt += 1;
      void sleep(delay).then(() => {
        if (!this.closing) this.open();
      });
    };
  }

  private onWelcome(welcome: Welcome): void {
    this.welcome = welcome;
    this.attempt = 0;
    if (this.lastSeq === undefined) this.lastSeq = welcome.seq;
    this.setState("open");
    // Resend everything unanswered, in order (the filters came back with the hello).
    for (const p of this.pending.values()) {
      p.parts = []; // a reply cut off by the disconnect comes again whole
      this.write(p.frame);
    }
    this.emit("welcome", welcome);
    this.connected.resolve();
    this.wakeSenders();
  }

  private dispatch(frame: Frame): void {
    switch (frame.type) {
      case "belief": {
        const note = frame as unknown as BeliefNotification;
        if (this.lastSeq === undefined || note.seq > this.lastSeq) this.lastSeq = note.seq;
        if (this.excluded.has(note.resident)) return; // a resumed backlog's, before the unsubscribe
        if (this.options.mirror) this.mirror.apply(note);
        this.emit("belief", note);
        return;
      }
      case "resumed": {
        const resumed = frame as unknown as Resumed;
        if (this.lastSeq === undefined || resumed.seq > this.lastSeq) this.lastSeq = resumed.seq;
        this.emit("resumed", resumed);
        return;
      }
    }
    const rid = frame.rid;
    let key = rid === undefined || rid === null ? undefined : String(rid);
    if (key === undefined && frame.type === "error" && typeof frame.event_id === "string") {
      key = this.unacked.get(frame.event_id)?.frame.rid as string | undefined;
    }
    const p = key === undefined ? undefined : this.pending.get(key);
    if (!p) {
      if (frame.type === "error") this.emit("error", frame as unknown as ErrorFrame);
      return;
    }
    if (frame.type === "error") {
      const err = frame as unknown as ErrorFrame;
      if (err.code === "shutting_down" && p.eventId !== undefined) {
        // Not stored, and the 1001 close follows: keep it, it is resent after reconnecting.
        p.parts = [];
        return;
      }
      this.settle(key!, p);
      p.reject(new CredenceError(err.code, err.message, err));
      return;
    }
    p.parts.push(frame);
    if (frame.more === true) return;
    this.settle(key!, p);
    p.resolve(p.parts.length === 1 ? frame : joinParts(p.parts));
  }

  private settle(key: string, p: Pending): void {
    this.pending.delete(key);
    if (p.eventId !== undefined) this.unacked.delete(p.eventId);
    this.wakeSenders();
  }

  private failAll(error: unknown): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    this.unacked.clear();
    for (const p of all) p.reject(error);
    this.wakeSenders();
  }

  private write(frame: Frame): void {
    const ws = this.ws;
    if (!ws || ws.readyState !== 1) return; // resent after the next welcome
    ws.send(this.options.encoding === "json" ? encodeJson(frame) : encodeMsgpack(frame));
  }

  // ------------------------------------------------------------------ backpressure

  private hasRoom(): boolean {
    const buffered = this.ws?.bufferedAmount ?? 0;
    return (
      this.unacked.size + this.reserved < this.options.maxInFlight &&
      buffered < this.options.highWaterBytes
    );
  }

  /** Admit waiting senders in FIFO order, each with a reserved slot, while there is room. */
  private wakeSenders(): void {
    while (this.room.length > 0 && (this.hasRoom() || this.state === "closed")) {
      this.reserved += 1;
      this.room.shift()!();
    }
    if (this.room.length === 0 && this.poll !== undefined) {
      clearInterval(this.poll);
      this.poll = undefined;
    }
  }

  /** Wait for a slot (first come, first served); the caller owns one reserved slot after. */
  private async admit(): Promise<void> {
    if (this.room.length === 0 && this.hasRoom()) {
      this.reserved += 1;
      return;
    }
    await new Promise<void>((resolve) => {
      this.room.push(resolve);
      // bufferedAmount drains without an event: look again every 20 ms while anyone waits.
      this.poll ??= setInterval(() => this.wakeSenders(), 20);
    });
  }

  /** How many events await their ack. */
  get inFlight(): number {
    return this.unacked.size;
  }

  // ------------------------------------------------------------------ requests

  private request<T>(frame: Frame, eventId?: string): Promise<T> {
    if (this.state === "closed" && this.closing) {
      return Promise.reject(new CredenceError("closed", "the client was closed"));
    }
    const data = this.options.encoding === "json" ? encodeJson(frame) : encodeMsgpack(frame);
    const limit = this.welcome?.max_frame ?? 262144;
    const size = typeof data === "string" ? new TextEncoder().encode(data).byteLength : data.byteLength;
    if (size > limit) {
      return Promise.reject(new CredenceError("too_large", `frame of ${size} bytes exceeds ${limit}`));
    }
    const rid = frame.rid === undefined ? `c${this.nextRid++}` : String(frame.rid);
    const full: Frame = { ...frame, rid };
    return new Promise<T>((resolve, reject) => {
      const p: Pending = { frame: full, resolve: resolve as (v: Frame) => void, reject, parts: [], eventId };
      this.pending.set(rid, p);
      if (eventId !== undefined) this.unacked.set(eventId, p);
      if (this.state === "open") this.write(full);
    });
  }

  /**
   * Send a world event; resolves with its `ack` once it is committed, rejects with the
   * `error` that refused it. Waits first while too many events are unacknowledged. Across a
   * reconnect the event is resent under the same `event_id` (a duplicate ack if it was stored).
   */
  async send(event: WorldEvent | (Frame & { event_id: string })): Promise<Ack> {
    await this.admit();
    this.reserved -= 1; // the slot passes to `unacked` below, synchronously
    if (this.unacked.has(event.event_id)) {
      return Promise.reject(new CredenceError("invalid_event", `event ${event.event_id} is already in flight`));
    }
    return this.request<Ack>({ type: "event", ...(event as object) } as Frame, event.event_id);
  }

  /** Set how much `resident` trusts `source` (an event of kind trust). */
  setTrust(event: { event_id: string; day: number; resident: string; source: string; topic?: string; value: number }): Promise<Ack> {
    return this.send({ kind: "trust", ...event });
  }

  /**
   * Name residents and label actions per language (an event of kind `register`, SPEC §7.12):
   * the narrative then says "Mira" instead of `mira`. Acked with `changes: 0`.
   */
  register(event: Omit<RegisterEvent, "kind">): Promise<Ack> {
    return this.send({ kind: "register", ...event });
  }

  /**
   * Declare the world's claim roots (an event of kind `schema`, SPEC §7.11); replaces any
   * earlier schema. Later events break it with `schema_violation`; with `undeclared: "warn"`
   * their acks carry `warnings`.
   */
  declareSchema(event: Omit<SchemaEvent, "kind">): Promise<Ack> {
    return this.send({ kind: "schema", ...event });
  }

  /**
   * `promiser` promises `to` to do `action` by day `by` (an event of kind `promise`, SPEC
   * §7.13). Each party's view (pending, kept, overdue, broken) then moves on its own evidence.
   */
  promise(event: Omit<PromiseEvent, "kind">): Promise<Ack> {
    return this.send({ kind: "promise", ...event });
  }

  /** Set, change, achieve or abandon a resident's goal (an event of kind `goal`, SPEC §7.14). */
  goal(event: Omit<GoalEvent, "kind">): Promise<Ack> {
    return this.send({ kind: "goal", ...event });
  }

  /** A page of the promises `resident` made or was made, with its view of each (SPEC §10.11). */
  promises(resident: string, opts: PageOptions<PromiseState> = {}): Promise<PromisesReply> {
    return this.query<PromisesReply>({ type: "promises", resident, ...opts });
  }

  /** A page of `resident`'s goals with their latest changes (SPEC §10.12). */
  goals(resident: string, opts: PageOptions<GoalState> = {}): Promise<GoalsReply> {
    return this.query<GoalsReply>({ type: "goals", resident, ...opts });
  }

  /**
   * The worlds this connection's token may open, sorted by id (SPEC §10.7): every one, or with
   * `limit` (1–1000) a page after `after`; the reply's `next` is the `after` of the next page
   * (null on the last). A sidecar may hold 10,000 worlds: list them a page at a time.
   */
  worlds(opts: { after?: string; limit?: number } = {}): Promise<WorldsReply> {
    return this.query<WorldsReply>({ type: "worlds", ...opts });
  }

  /**
   * Copy this connection's world into the new world `into`: its log up to event seq `at` (all
   * of it without), beliefs rebuilt by replay. Writer only; `into` must not exist yet
   * (`invalid_frame`). Runs after every earlier event of this connection is committed.
   */
  fork(into: string, at?: number): Promise<ForkedReply> {
    return this.query<ForkedReply>({ type: "fork", into, at });
  }

  /** Delete `world` and everything in it (naming it is the confirmation; writer only). */
  deleteWorld(world: string): Promise<DeletedReply> {
    return this.query<DeletedReply>({ type: "delete", world });
  }

  /** Any query frame; the reply's parts are joined (SPEC §11). */
  query<T = Frame>(frame: Frame): Promise<T> {
    return this.request<T>(frame);
  }

  /**
   * A resident's beliefs in root order, joined over every part (SPEC §10.1), optionally
   * filtered (`{prefix: "water:", min_confidence: 50}`); a string is `{after: string}`. For a
   * resident who knows a lot, read a page at a time: `{limit: 1000}`, then `{after: <the
   * last root received>, limit: 1000}` until a page holds fewer than `limit`.
   */
  async beliefs(resident: string, filter: string | BeliefsFilter = {}): Promise<BeliefsReply> {
    const f = typeof filter === "string" ? { after: filter } : filter;
    return this.query<BeliefsReply>({ type: "beliefs", resident, ...f });
  }

  /** Load a resident's beliefs into the mirror (notifications that arrive meanwhile win). */
  async loadMirror(resident: string): Promise<BeliefsReply> {
    this.mirror.beginLoad(resident);
    const reply = await this.beliefs(resident);
    this.mirror.endLoad(reply);
    return reply;
  }

  /**
   * Why `resident` believes what she does about `root`: the belief, its evidence and its
   * change records (SPEC §10.2). `limit`: only the latest `limit` of each (`evidence_total`
   * and `history_total` still count them all): a belief seen 10,000 times answers small.
   */
  explain(resident: string, root: string, limit?: number): Promise<ExplanationReply> {
    const frame: Frame = { type: "explain", resident, root };
    if (limit !== undefined) frame.limit = limit;
    return this.query<ExplanationReply>(frame);
  }

  distribution(root: string): Promise<DistributionReply> {
    return this.query<DistributionReply>({ type: "distribution", root });
  }

  /**
   * A resident's beliefs as prompt text (SPEC §10.4): `budget` characters at most, in `lang`,
   * the lines bearing on `focus` (people and places present, root prefixes, topics) first.
   */
  narrative(resident: string, opts: NarrativeOptions = {}): Promise<NarrativeReply> {
    const frame: Frame = { type: "narrative", resident, budget: opts.budget, lang: opts.lang };
    if (opts.focus) frame.focus = { ...opts.focus };
    return this.query<NarrativeReply>(frame);
  }

  /** One page of a belief graph (SPEC §10.5); pass the reply's `next` as `after` for the next. */
  graph(opts: GraphOptions): Promise<GraphReply> {
    return this.query<GraphReply>({ type: "graph", ...opts });
  }

  /**
   * Every page of a belief graph in order, from `opts.after` (or the start), one query per
   * page; stop early by breaking out of the loop. `joinGraphPages` joins them into one graph.
   */
  async *graphPages(opts: GraphOptions): AsyncGenerator<GraphReply, void, undefined> {
    let after = opts.after;
    for (;;) {
      const page = await this.graph({ ...opts, after });
      yield page;
      if (page.next === null || page.next === undefined) return;
      after = page.next;
    }
  }

  /**
   * One page of `resident`'s trust table (SPEC §10.6), in (source, topic) order; a string is
   * `{source}`. Pass the reply's `next` as `after` for the next page (null on the last).
   */
  trust(resident: string, opts: string | TrustOptions = {}): Promise<TrustReply> {
    const o = typeof opts === "string" ? { source: opts } : opts;
    return this.query<TrustReply>({ type: "trust", resident, ...o });
  }

  /**
   * Every page of a trust table in order, from `opts.after` (or the start), one query per
   * page; stop early by breaking out of the loop. `joinTrustPages` joins their entries.
   */
  async *trustPages(resident: string, opts: TrustOptions = {}): AsyncGenerator<TrustReply, void, undefined> {
    let after = opts.after;
    for (;;) {
      const page = await this.trust(resident, { ...opts, after });
      yield page;
      if (page.next === null || page.next === undefined) return;
      after = page.next;
    }
  }

  /**
   * Add a notification filter (SPEC §8.2). Once confirmed it is kept: after a reconnect the
   * new hello carries it in `filters`, so its missed changes are resumed with the others,
   * each exactly once (SPEC §9). Resolves with `subscribed` (`seq`: where the filter starts).
   */
  async subscribe(filter: SubscribeFilter): Promise<{ type: "subscribed"; seq: number }> {
    const reply = await this.query<{ type: "subscribed"; seq: number }>({ type: "subscribe", ...filter });
    const copy: SubscribeFilter = { ...filter };
    if (Array.isArray(filter.residents)) copy.residents = [...filter.residents];
    this.filters.push(copy);
    if (filter.residents === "*") this.excluded.clear();
    else for (const r of filter.residents) this.excluded.delete(r);
    return reply;
  }

  /**
   * Remove residents from every filter (a filter left with none is dropped) and exclude them
   * from `"*"` filters; no residents or `"*"`: drop every filter (SPEC §8.3). The kept
   * filters are what a reconnect restores.
   */
  async unsubscribe(residents?: string[] | "*"): Promise<Frame> {
    const reply = await this.query({ type: "unsubscribe", residents });
    if (residents === undefined || residents === "*") {
      this.filters = [];
      this.excluded.clear();
      return reply;
    }
    const gone = new Set(residents);
    const kept: SubscribeFilter[] = [];
    for (const f of this.filters) {
      if (f.residents === "*") {
        kept.push(f);
        for (const r of gone) this.excluded.add(r);
        continue;
      }
      const rest = f.residents.filter((r) => !gone.has(r));
      if (rest.length > 0) kept.push({ ...f, residents: rest });
    }
    this.filters = kept;
    return reply;
  }

  /** The filters this connection holds (and restores after a reconnect), copies. */
  get subscriptions(): SubscribeFilter[] {
    return this.filters.map((f) => ({ ...f }));
  }

  /** Send one encoded message as is (tools and conformance tests; no tracking, no checks). */
  sendRaw(data: Uint8Array | string): void {
    if (!this.ws || this.ws.readyState !== 1) throw new CredenceError("closed", "not connected");
    this.ws.send(data);
  }

  /** A round trip: every frame the sidecar sent before its reply to this has arrived. */
  async sync(): Promise<void> {
    await this.query({ type: "unsubscribe", residents: ["\u0000sync"] });
  }
}

/**
 * Pages of one graph joined into the whole graph (SPEC §10.5): one node per id (the first
 * seen), edges with the same source, target and type merged with their counts added (the
 * first page's `event_id`, `day` and `relation` kept).
 */
/** Pages of one trust table joined: their entries in order (SPEC §10.6). */
export function joinTrustPages(pages: TrustReply[]): TrustReply["entries"] {
  return pages.flatMap((page) => page.entries);
}

export function joinGraphPages(pages: GraphReply[]): { nodes: GraphReply["nodes"]; edges: GraphReply["edges"] } {
  const nodes = new Map<string, GraphReply["nodes"][number]>();
  const edges = new Map<string, GraphReply["edges"][number]>();
  for (const page of pages) {
    for (const node of page.nodes) if (!nodes.has(node.id)) nodes.set(node.id, node);
    for (const edge of page.edges) {
      const key = JSON.stringify([edge.source, edge.target, edge.type]);
      const seen = edges.get(key);
      if (seen === undefined) edges.set(key, { ...edge });
      else seen.count += edge.count;
    }
  }
  return { nodes: [...nodes.values()], edges: [...edges.values()] };
}

/** Concatenate the list fields of a paged reply's parts into one frame (SPEC §11); a
 * narrative's `text` pieces are concatenated too, and runs of one section joined. */
export function joinParts(parts: Frame[]): Frame {
  const last = parts[parts.length - 1]!;
  const fields = PAGED_FIELDS[last.type] ?? [];
  const joined: Frame = { ...last };
  for (const field of fields) {
    joined[field] = parts.flatMap((p) => (Array.isArray(p[field]) ? (p[field] as unknown[]) : []));
  }
  if (last.type === "narrative") {
    joined.text = parts.map((p) => (typeof p.text === "string" ? p.text : "")).join("");
    type Section = Record<string, unknown>;
    const sections: Section[] = [];
    for (const section of (joined.sections ?? []) as Section[]) {
      const previous = sections[sections.length - 1];
      if (previous !== undefined && previous.name === section.name) {
        previous.entries = [...(previous.entries as unknown[]), ...(section.entries as unknown[])];
      } else {
        sections.push({ ...section, entries: [...((section.entries ?? []) as unknown[])] });
      }
    }
    joined.sections = sections;
  }
  return joined;
}

export type { Rid };
