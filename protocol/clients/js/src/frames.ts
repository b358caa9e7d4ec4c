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
  | "trust";
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
  subject: string;
  interpretations?: Record<string, string>;
}
export interface SayEvent extends EventBase, About {
  kind: "say";
  speaker: string;
  listeners: string[];
  claim: Claim;
  subject: string;
  topic?: string;
  overhearers?: string[];
}
export interface AnnounceEvent extends EventBase, About {
  kind: "announce";
  speaker: string;
  audience: string[] | "*";
  claim: Claim;
  subject: string;
  topic?: string;
}
export interface ActEvent extends EventBase {
  kind: "act";
  actor: string;
  action: string;
  status: "completed" | "rejected" | "interrupted" | "replaced";
  witnesses?: string[];
  subject?: string;
}
export interface InterveneEvent extends EventBase {
  kind: "intervene";
  resident: string;
  op: "implant" | "distort" | "suppress" | "soften";
  claim: Claim;
  subject?: string;
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
export type WorldEvent =
  | ObserveEvent
  | SayEvent
  | AnnounceEvent
  | ActEvent
  | InterveneEvent
  | TickEvent
  | TrustEvent
  | ProposeEvent;

export interface SubscribeFilter {
  residents: string[] | "*";
  roots?: string[];
  changes?: ChangeKind[];
  crossing?: number;
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
}

export interface Ack {
  type: "ack";
  event_id: string;
  duplicate: boolean;
  changes: number;
  seq?: number;
  rid?: Rid;
  results?: Array<{ root: string; accepted: boolean; reasons: string[] }>;
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
  subject: string | null;
  prev_subject: string | null;
  event_id: string;
  evidence_id: string | null;
  day: number;
  detail: string | null;
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
  subject: string;
  interpretation: string | null;
  people: string[];
  places: string[];
  topics: string[];
  confidence: number;
  state: BeliefState;
  source_kind: SourceKind;
  source: string | null;
  intervention: "implanted" | "distorted" | null;
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
export interface GraphReply extends Paged {
  type: "graph";
  resident: string | null;
  root: string | null;
  nodes: Array<{ id: string; type: string; label: string; [k: string]: unknown }>;
  edges: Array<{ source: string; target: string; type: string; count: number; [k: string]: unknown }>;
}
export interface TrustReply extends Paged {
  type: "trust";
  resident: string;
  source: string | null;
  default: number;
  entries: Array<{ source: string; topic: string | null; value: number; history: Array<Record<string, unknown>> }>;
}

/** The list fields of each paged reply, concatenated over its parts (SPEC §11). */
export const PAGED_FIELDS: Record<string, readonly string[]> = {
  beliefs: ["beliefs"],
  explanation: ["evidence", "history"],
  distribution: ["residents"],
  narrative: ["sections"],
  graph: ["nodes", "edges"],
  trust: ["entries"],
};

/** Close codes after which reconnecting cannot help (SPEC §13). */
export const FATAL_CLOSE_CODES: ReadonlySet<number> = new Set([4000, 4001, 4002, 4011, 1002, 1007]);
