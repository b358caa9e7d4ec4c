/** Typed frames of Credence protocol v1 (protocol/SPEC.md). Unknown keys may appear; ignore them. */

export type ClaimValue = string | number | boolean;
export type Rid = string | number | boolean;
export type ChangeKind =
  | "formed"
  | "reinforced"
  | "doubted"
  | "anomaly"
  | "corrected"
  | "decayed"
  | "faded"
  | "intervened"
  | "updated"
  | "trust"
  /** A detail drifted in recall (worlds with misremembering on); `detail` says which (see `misremembered`). */
  | "misremembered"
  /** A party's view of a promise moved (root `promise:<id>`, value the state, SPEC §7.13). */
  | "promise"
  /** A goal was set, changed, achieved or abandoned (root `goal:<id>`, SPEC §7.14). */
  | "goal";
export type BeliefState = "influencing" | "past" | "doubtful" | "anomalous" | "corrected";
export type SourceKind = "firsthand" | "hearsay" | "implanted";

export interface Claim {
  root: string;
  value?: ClaimValue | null;
  mutable?: boolean;
}

interface EventBase {
  event_id: string;
  /** The game clock in days (fractions allowed). */
  day: number;
}
/** A text, or the same text per language (SPEC §7.1: `{en, zh-Hant}`, at least one). */
export type Texts = string | { en?: string; "zh-Hant"?: string };
interface About {
  people?: string[];
  places?: string[];
  topics?: string[];
  importance?: number;
  emotion?: number;
}
export interface ObserveEvent extends EventBase, About {
  kind: "observe";
  witnesses: string[];
  claim: Claim;
  subject: Texts;
  interpretations?: Record<string, Texts>;
}
export interface SayEvent extends EventBase, About {
  kind: "say";
  speaker: string;
  listeners: string[];
  claim: Claim;
  subject: Texts;
  topic?: string;
  overhearers?: string[];
}
export interface AnnounceEvent extends EventBase, About {
  kind: "announce";
  speaker: string;
  audience: string[] | "*";
  claim: Claim;
  subject: Texts;
  topic?: string;
}
export interface ActEvent extends EventBase {
  kind: "act";
  actor: string;
  action: string;
  status: "completed" | "rejected" | "interrupted" | "replaced";
  witnesses?: string[];
  subject?: Texts;
  /** Why a rejected or interrupted act failed, in the game's words. */
  reason?: Texts;
}
export interface InterveneEvent extends EventBase {
  kind: "intervene";
  resident: string;
  op: "implant" | "distort" | "suppress" | "soften";
  claim: Claim;
  subject?: Texts;
}
export interface TickEvent extends EventBase {
  kind: "tick";
}
export interface TrustEvent extends EventBase {
  kind: "trust";
  resident: string;
  source: string;
  topic?: string;
  value: number;
}
export interface ProposeEvent extends EventBase {
  kind: "propose";
  resident: string;
  edits: Array<{ root: string; subject?: string; interpretation?: string; [k: string]: unknown }>;
}
/** The narrative's languages (SPEC §7.12). */
export type Lang = "en" | "zh-Hant";
/** Display text per language, e.g. `{ en: "Mira", "zh-Hant": "米拉" }`. */
export type Names = Partial<Record<Lang, string>>;
/** A `register` event (SPEC §7.12): display names of residents, labels of `act` actions. */
export interface RegisterEvent extends EventBase {
  kind: "register";
  /** Registering a resident again replaces its names. Give `residents`, `actions` or both. */
  residents?: Array<{ resident: string; names: Names }>;
  /** Labels as a verb phrase in the base form ("fetch water"). */
  actions?: Array<{ action: string; names: Names }>;
}
/** What a schema does with a claim whose root no declared prefix covers. */
export type UndeclaredPolicy = "accept" | "warn" | "refuse";
/** One declared root prefix of a world's schema (SPEC §7.11). */
export interface SchemaRoot {
  prefix: string;
  /** The allowed values; any other is refused `schema_violation` (`value_not_allowed`). */
  values?: ClaimValue[];
  /** Display text per language, used by the narrative where it would show the root. */
  text?: Names;
  mutable?: boolean;
  /** 0–1: the importance of an event that gives none. */
  importance?: number;
}
/** A `schema` event (SPEC §7.11): replaces the world's schema. */
export interface SchemaEvent extends EventBase {
  kind: "schema";
  /** Default `accept`; `warn` puts `warnings` on the ack; `refuse` refuses `undeclared_root`. */
  undeclared?: UndeclaredPolicy;
  roots?: SchemaRoot[];
}
/** A `promise` event (SPEC §7.13): each party's view of it then moves on its own evidence. */
export interface PromiseEvent extends EventBase {
  kind: "promise";
  /** Unique in the world. */
  promise: string;
  promiser: string;
  to: string[];
  /** The `act` action (by the promiser, completed) that keeps it. */
  action: string;
  /** What was promised, as a verb phrase: "mend the fence". */
  subject: string;
  /** The deadline (a game day not before `day`); absent: never overdue. */
  by?: number;
}
export type PromiseState = "pending" | "kept" | "overdue" | "broken";
export type GoalOp = "set" | "changed" | "achieved" | "abandoned";
export type GoalState = "active" | "achieved" | "abandoned";
/** A `goal` event (SPEC §7.14): the game sets, changes, achieves or abandons a goal. */
export interface GoalEvent extends EventBase {
  kind: "goal";
  resident: string;
  goal: string;
  op: GoalOp;
  /** Required for `set` and `changed`: what the resident is trying to do, as a verb phrase. */
  subject?: string;
}
export type WorldEvent =
  | PromiseEvent
  | GoalEvent
  | ObserveEvent
  | SayEvent
  | AnnounceEvent
  | ActEvent
  | InterveneEvent
  | TickEvent
  | TrustEvent
  | ProposeEvent
  | RegisterEvent
  | SchemaEvent;

// ----------------------------------------------------------------------------- game → sidecar

/** An event frame: `{type: "event", kind, …}`. */
export type EventFrame = WorldEvent & { type: "event"; rid?: Rid };
/** A `register` frame: the same as an event of kind `register`. */
export type RegisterFrame = Omit<RegisterEvent, "kind"> & { type: "register"; rid?: Rid };
/** A `schema` frame: the same as an event of kind `schema`. */
export type SchemaFrame = Omit<SchemaEvent, "kind"> & { type: "schema"; rid?: Rid };
/** List the worlds this connection's token may open (SPEC §10.7). */
export interface WorldsFrame {
  type: "worlds";
  rid?: Rid;
}
/** Copy this connection's world into a new world `into`, its log up to event seq `at` (writer only). */
export interface ForkFrame {
  type: "fork";
  rid?: Rid;
  into: string;
  at?: number;
}
/** Delete a world and everything in it; naming it is the confirmation (writer only). */
export interface DeleteFrame {
  type: "delete";
  rid?: Rid;
  world: string;
}

/** A notification filter (SPEC §8.2): every condition given must hold. */
export interface SubscribeFilter {
  /** These residents, or `"*"` for every resident. */
  residents: string[] | "*";
  /** Roots starting with one of these prefixes (absent or empty: any root). */
  roots?: string[];
  /** Only these change kinds (absent or empty: any kind). */
  changes?: ChangeKind[];
  /** Only changes whose confidence crosses this threshold (0–100), either way. */
  crossing?: number;
}

/** What is present now in the scene (SPEC §10.4): lines bearing on it are ranked first. */
export interface NarrativeFocus {
  /** Resident ids present or talked about. */
  people?: string[];
  /** Place ids. */
  places?: string[];
  /** Root prefixes (`"water:"`). */
  roots?: string[];
  /** Free words (`"festival"`). */
  topics?: string[];
}

/** Options of `narrative()` (SPEC §10.4). */
export interface NarrativeOptions {
  /** The most characters (code points) of `text`, 200–50,000 (default 2000). */
  budget?: number;
  /** `"en"` (default) or `"zh-Hant"`. */
  lang?: "en" | "zh-Hant";
  focus?: NarrativeFocus;
}

/** Filters of `beliefs()` (SPEC §10.1); they combine with AND, each list with OR inside. */
export interface BeliefsFilter {
  /** Only roots sorting after this one (exclusive): continue a listing. */
  after?: string;
  /** One root exactly. */
  root?: string;
  /** Roots starting with any of these prefixes. */
  prefix?: string | string[];
  /** Beliefs in any of these states. */
  states?: BeliefState[];
  /** Beliefs naming any of these residents (in `people`, or an `action:`/`relation:` root). */
  people?: string[];
  /** Beliefs naming any of these places. */
  places?: string[];
  /** Beliefs held with at least this confidence (0–100). */
  min_confidence?: number;
  /**
   * At most this many beliefs (1–10,000), the first in root order. With `after` set to the
   * last root of the previous page, a resident's memory is read a page at a time.
   */
  limit?: number;
}

// ----------------------------------------------------------------------------- sidecar → game

export interface Welcome {
  type: "welcome";
  rid?: Rid;
  protocol: number;
  world: string;
  seq: number;
  server: string;
  role: "writer" | "reader";
  auth: "open" | "token";
  max_frame: number;
  max_residents: number;
}

export interface Ack {
  type: "ack";
  event_id: string;
  duplicate: boolean;
  changes: number;
  seq?: number;
  rid?: Rid;
  results?: Array<{ root: string; accepted: boolean; reasons: string[] }>;
  /** Only when there are some: e.g. a root the world's schema does not declare, when it says `warn`. */
  warnings?: string[];
}

export interface BeliefNotification {
  type: "belief";
  seq: number;
  resident: string;
  root: string;
  value: ClaimValue;
  prev_value: ClaimValue | null;
  change: ChangeKind;
  confidence: number;
  prev_confidence: number | null;
  state: BeliefState;
  prev_state: BeliefState | null;
  source_kind: SourceKind;
  source: string | null;
  subject: Texts | null;
  prev_subject: Texts | null;
  event_id: string;
  evidence_id: string | null;
  day: number;
  detail: string | null;
}

/** The `detail` of a `misremembered` change, decoded (SPEC §18.2). */
export interface MisrememberedDetail {
  field: "places" | "people" | "remembered_day";
  /** A list of places or people, or a day. */
  before: string[] | number;
  after: string[] | number;
}

/**
 * What drifted in a `misremembered` notification (its `detail` is a JSON map); `null` for any
 * other change, or a detail that is not such a map.
 */
export function misremembered(note: BeliefNotification): MisrememberedDetail | null {
  if (note.change !== "misremembered" || typeof note.detail !== "string") return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(note.detail);
  } catch {
    return null;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return null;
  const d = parsed as Record<string, unknown>;
  const ok = (v: unknown) => typeof v === "number" || (Array.isArray(v) && v.every((x) => typeof x === "string"));
  if (d.field !== "places" && d.field !== "people" && d.field !== "remembered_day") return null;
  if (!ok(d.before) || !ok(d.after)) return null;
  return { field: d.field, before: d.before as string[] | number, after: d.after as string[] | number };
}

export interface Resumed {
  type: "resumed";
  seq: number;
  sent: number;
}

export interface ErrorFrame {
  type: "error";
  code: string;
  message: string;
  rid?: Rid;
  event_id?: string;
  reason?: string;
}

export interface BeliefSummary {
  resident: string;
  root: string;
  value: ClaimValue;
  subject: Texts;
  interpretation: Texts | null;
  people: string[];
  places: string[];
  topics: string[];
  confidence: number;
  state: BeliefState;
  source_kind: SourceKind;
  source: string | null;
  intervention: "implanted" | "distorted" | "discovered" | "suppressed" | null;
  evidence_refs: string[];
  formed_day: number;
  updated_day: number;
}

interface Paged {
  rid?: Rid;
  /** Index of the last part joined; `more` is false once joined. */
  part: number;
  more: boolean;
}
export interface BeliefsReply extends Paged {
  type: "beliefs";
  resident: string;
  beliefs: BeliefSummary[];
}
export interface ExplanationReply extends Paged {
  type: "explanation";
  resident: string;
  root: string;
  belief: BeliefSummary;
  evidence: Array<Record<string, unknown>>;
  history: Array<Record<string, unknown>>;
  /** How many pieces of evidence and change records the belief has in all (with a `limit`, more than are listed). */
  evidence_total: number;
  history_total: number;
}
export interface DistributionReply extends Paged {
  type: "distribution";
  root: string;
  values: Array<{
    value: ClaimValue;
    residents: number;
    mean_confidence: number;
    states: Record<string, number>;
    independent_origins: number;
  }>;
  residents: Array<{
    resident: string;
    value: ClaimValue;
    confidence: number;
    state: BeliefState;
    source_kind: SourceKind;
    source: string | null;
  }>;
  observed_value?: ClaimValue;
  false_share?: number;
}
export interface NarrativeReply extends Paged {
  type: "narrative";
  resident: string;
  lang: string;
  budget: number;
  text: string;
  omitted: number;
  compressed: boolean;
  sections: Array<{ name: string; title: string; entries: Array<Record<string, unknown>>; omitted: number }>;
}
/**
 * One page of a belief graph (SPEC §10.5): at most `limit` event nodes, the claim, person and
 * place nodes they need, and the edges between them. `next` is the `after` of the next page,
 * null on the last; pages join by node id, edge counts added up (see `joinGraphPages`).
 */
export interface GraphReply extends Paged {
  type: "graph";
  resident: string | null;
  root: string | null;
  next: string | null;
  nodes: Array<{ id: string; type: string; label: string; [k: string]: unknown }>;
  edges: Array<{ source: string; target: string; type: string; count: number; [k: string]: unknown }>;
}

/** Which graph and which page: `resident`, `root` or both; `after` the previous page's `next`. */
export interface GraphOptions {
  resident?: string;
  root?: string;
  after?: string;
  /** Event nodes in the page: 1–1000, default 100. */
  limit?: number;
}
/**
 * One page of a trust table (SPEC §10.6): at most `limit` entries in (source, topic) order.
 * `next` is the `after` of the next page, null on the last.
 */
export interface TrustReply extends Paged {
  type: "trust";
  resident: string;
  source: string | null;
  default: number;
  next: string | null;
  entries: Array<{
    source: string;
    topic: string | null;
    value: number;
    history: Array<Record<string, unknown>>;
    history_total: number;
  }>;
}

/** Which part of a trust table: one `source`'s entries or all; `after` the previous page's `next`. */
export interface TrustOptions {
  source?: string;
  after?: string;
  /** Entries in the page: 1–1000, default 100. */
  limit?: number;
}

/** One promise of a `promises` reply: what was promised and the resident's view of it (SPEC §10.11). */
export interface PromiseEntry {
  promise: string;
  promiser: string;
  to: string[];
  action: string;
  subject: string;
  made_day: number;
  by: number | null;
  state: PromiseState;
  how: "made" | "seen" | "told" | "deadline";
  /** The teller, when the state was told. */
  source: string | null;
  since: number;
}
export interface PromisesReply extends Paged {
  type: "promises";
  resident: string;
  /** Pass as `after` for the next page; null on the last. */
  next: string | null;
  promises: PromiseEntry[];
}
export interface GoalEntry {
  goal: string;
  subject: string;
  state: GoalState;
  set_day: number;
  day: number;
  prev_subject: string | null;
  history: Array<{ op: GoalOp; subject_before: string | null; subject: string; day: number }>;
}
export interface GoalsReply extends Paged {
  type: "goals";
  resident: string;
  next: string | null;
  goals: GoalEntry[];
}
/** Options of the `promises` and `goals` queries. */
export interface PageOptions<S extends string> {
  state?: S;
  after?: string;
  /** 1–1000, default 100. */
  limit?: number;
}

/** One world as the lifecycle replies describe it (SPEC §10.7). */
export interface WorldInfo {
  world: string;
  /** The world's clock. */
  day: number;
  /** The length of its event log (the last event seq). */
  events: number;
  /** Its last change seq. */
  changes: number;
  residents: number;
  beliefs: number;
}
export interface WorldsReply {
  type: "worlds";
  rid?: Rid;
  /** The worlds this connection's token may open, sorted by id. */
  worlds: WorldInfo[];
  /** The `after` of the next page (a query with `limit`), null on the last or without one. */
  next: string | null;
}
export interface ForkedReply extends WorldInfo {
  type: "forked";
  rid?: Rid;
  /** The world it was copied from (the connection's). */
  source: string;
  /** The last event seq kept; `null` when the fork kept the whole log. */
  at: number | null;
}
export interface DeletedReply extends WorldInfo {
  type: "deleted";
  rid?: Rid;
}

/** The list fields of each paged reply, concatenated over its parts (SPEC §11). */
export const PAGED_FIELDS: Record<string, readonly string[]> = {
  beliefs: ["beliefs"],
  explanation: ["evidence", "history"],
  distribution: ["residents"],
  narrative: ["sections"],
  graph: ["nodes", "edges"],
  trust: ["entries"],
  worlds: ["worlds"],
  residents: ["residents"],
  events: ["events"],
  said: ["said"],
  promises: ["promises"],
  goals: ["goals"],
};

/** Close codes after which reconnecting cannot help (SPEC §13). */
export const FATAL_CLOSE_CODES: ReadonlySet<number> = new Set([4000, 4001, 4002, 4011, 1002, 1007]);
