class_name CredenceProtocol
extends RefCounted
## The Credence wire protocol (protocol/SPEC.md) as pure functions: no socket, no clock, no
## node. CredenceClient does the I/O and calls these for every decision, so the protocol logic
## can be read (and was tested, see README.md) on its own: frame building, whole-number floats,
## paged replies, resume bookkeeping, reply matching, the belief mirror.
##
## Written in a small subset of GDScript (static functions, literals, if/for/return, Array and
## Dictionary methods) so that tests/test_client_godot.py can evaluate this very file with a
## small interpreter over gdtoolkit's parse tree and replay its frames against a real sidecar.

## What a reply frame means for the request it answers (see classify_reply).
enum Reply { PART, DONE, FAILED, HELD }

const PROTOCOL_VERSION := 1
const CLIENT_NAME := "credence-godot/0.1.0"
## ±(2^53 − 1): the integers every client language carries exactly (SPEC §3).
const MAX_SAFE_INT := 9007199254740991
## Reply types whose list fields are split over parts, and those fields (SPEC §11).
const PAGED_FIELDS := {
	"beliefs": ["beliefs"],
	"explanation": ["evidence", "history"],
	"distribution": ["residents"],
	"narrative": ["sections"],
	"graph": ["nodes", "edges"],
	"trust": ["entries"],
	"residents": ["residents"],
	"events": ["events"],
	"said": ["said"],
	"promises": ["promises"],
	"goals": ["goals"],
	"worlds": ["worlds"],
}
## Close codes after which reconnecting cannot help (SPEC §13): fix the client or the token.
const FATAL_CLOSE_CODES := [4000, 4001, 4002, 4011, 1002, 1007]
## Frame types that are events: acked (or refused) by event_id, resent after a reconnect.
const EVENT_TYPES := ["event", "propose", "register", "schema"]
## Fields that are numbers of days, shares or weights: they stay floats even when whole.
const FLOAT_KEYS := [
	"day",
	"formed_day",
	"updated_day",
	"corrected_day",
	"remembered_day",
	"last_day",
	"first_day",
	"made_day",
	"by",
	"since",
	"set_day",
	"mean_confidence",
	"false_share",
	"importance",
	"emotion",
	"crossing",
	"score",
	"relevance",
	"recency",
	"trust",
	"topic_trust",
]
## In a trust record (a `trust` reply or a change of kind `trust`) these are trust floats.
const TRUST_KEYS := ["value", "prev_value", "default"]
## The prefix of the one line `credence serve` prints on stdout (SPEC §1).
const URL_PREFIX := "CREDENCE_URL="


## The first frame of a connection (SPEC §5). `subscribe` is "*", an Array of resident ids or
## null; `filters` the filters added with subscribe() since the first hello (each the fields of
## a subscribe frame), restored in `hello.filters` so that their missed changes are resumed
## too (SPEC §9); `last_seq` is the change seq to resume after, -1 for none. A resume is only
## asked for with a filter (without one the backlog would be empty).
static func hello_frame(
	world: String,
	token: String,
	subscribe: Variant,
	filters: Array,
	last_seq: int,
	client_name: String
) -> Dictionary:
	var frame := {"type": "hello", "protocol": PROTOCOL_VERSION, "world": world}
	frame["client"] = client_name
	if token != "":
		frame["token"] = token
	if subscribe != null:
		frame["subscribe"] = subscribe
	if not filters.is_empty():
		frame["filters"] = filters
	if last_seq >= 0 and (subscribe != null or not filters.is_empty()):
		frame["resume"] = last_seq
	return frame


## An event frame with its rid: `event` holds `event_id`, `day`, `kind` and the kind's fields
## (SPEC §7). A frame that already has a `type` (`trust` with a value, `propose`, `register`,
## `schema`) keeps it.
static func event_frame(event: Dictionary, rid: String) -> Dictionary:
	var frame := {"type": "event"}
	for key in event:
		frame[key] = event[key]
	frame["rid"] = rid
	return frame


## A promise event (SPEC §7.13) for `client.send_event`: `promiser` promises `to` to do
## `action` (`subject`, a verb phrase: "mend the fence") by day `by` (< 0: no deadline).
## Its pages: `client.query("promises", {"resident": r, "state": s, "after": a, "limit": n})`.
static func promise_event(
	event_id: String,
	day: float,
	promise: String,
	promiser: String,
	to: Array,
	action: String,
	subject: String,
	by := -1.0
) -> Dictionary:
	var event := {"event_id": event_id, "day": day, "kind": "promise", "promise": promise}
	event.merge({"promiser": promiser, "to": to, "action": action, "subject": subject})
	if by >= 0.0:
		event["by"] = by
	return event


## A goal event (SPEC §7.14) for `client.send_event`: `op` is set, changed, achieved or
## abandoned (`subject` required for set and changed). Pages: `client.query("goals", {...})`.
static func goal_event(
	event_id: String, day: float, resident: String, goal: String, op: String, subject := ""
) -> Dictionary:
	var event := {"event_id": event_id, "day": day, "kind": "goal", "resident": resident}
	event.merge({"goal": goal, "op": op})
	if subject != "":
		event["subject"] = subject
	return event


## A request frame of `type` with `fields` (null values left out, SPEC §3: absent = nil).
static func request_frame(type: String, fields: Dictionary, rid: String) -> Dictionary:
	var frame := {"type": type}
	for key in fields:
		if fields[key] != null:
			frame[key] = fields[key]
	frame["rid"] = rid
	return frame


## The event_id of `frame` if the frame is an event (one the sidecar acks), else "".
static func event_id_of(frame: Dictionary) -> String:
	var type = frame.get("type", "")
	var is_event: bool = type in EVENT_TYPES or (type == "trust" and frame.get("value") != null)
	if is_event and frame.get("event_id") is String:
		return frame["event_id"]
	return ""


## Whether `value` is a float without a fraction within ±(2^53 − 1) (so, an integer).
static func is_integral(value: float) -> bool:
	return value == floor(value) and absf(value) <= MAX_SAFE_INT


## `value` (a decoded JSON frame or part of one) with every whole-number float that stands for
## an integer made an int: Godot's JSON parser returns every number as a float, so a seq, a
## confidence or a claim value 12 arrives as 12.0. Days, weights and trust values stay floats.
static func whole_numbers(value: Variant, in_trust: bool = false) -> Variant:
	if value is float:
		if is_integral(value):
			return int(value)
		return value
	if value is Array:
		var items := []
		for item in value:
			items.append(whole_numbers(item, in_trust))
		return items
	if value is Dictionary:
		var trust: bool = in_trust or value.get("change") == "trust" or value.get("type") == "trust"
		var out := {}
		for key in value:
			if key in FLOAT_KEYS or (trust and key in TRUST_KEYS):
				out[key] = value[key]
			elif key == "why" and value[key] is Dictionary:
				out[key] = _why(value[key])
			else:
				out[key] = whole_numbers(value[key], trust)
		return out
	return value


## A narrative entry's `why`: its score parts are shares, floats even when whole (its
## `confidence` is 0-1 there); only `tier` is a whole number.
static func _why(why: Dictionary) -> Dictionary:
	var out := {}
	for key in why:
		if key == "tier" or key == "matched":
			out[key] = whole_numbers(why[key])
		else:
			out[key] = why[key]
	return out


## One reply from its parts, in order: every list field of SPEC §11 concatenated over the
## parts, every other field from the last part (`more` false). A narrative's `text` pieces are
## concatenated too, and the runs of one section (adjacent sections of the same `name`) joined
## into one, so the reply always has its ten sections.
static func join_parts(parts: Array) -> Dictionary:
	var joined: Dictionary = parts[parts.size() - 1].duplicate()
	for field in PAGED_FIELDS.get(joined.get("type", ""), []):
		var items := []
		for part in parts:
			if part.get(field) is Array:
				items.append_array(part[field])
		joined[field] = items
	if joined.get("type") == "narrative":
		var text := ""
		for part in parts:
			if part.get("text") is String:
				text += part["text"]
		joined["text"] = text
		joined["sections"] = join_runs(joined.get("sections", []))
	return joined


## Narrative sections with adjacent runs of the same `name` joined (their entries concatenated).
static func join_runs(sections: Array) -> Array:
	var out := []
	for section in sections:
		if not out.is_empty() and out[out.size() - 1].get("name") == section.get("name"):
			out[out.size() - 1]["entries"].append_array(section.get("entries", []))
		else:
			var copy: Dictionary = section.duplicate()
			copy["entries"] = section.get("entries", []).duplicate()
			out.append(copy)
	return out


## What `frame` means for the request it answers: one more part, the whole reply, a refusal,
## or (a `shutting_down` refusal of an event) HELD: it was not stored, keep it and resend it
## after the reconnect that follows (SPEC §12).
static func classify_reply(frame: Dictionary, is_event: bool) -> int:
	if frame.get("type") == "error":
		if is_event and frame.get("code") == "shutting_down":
			return Reply.HELD
		return Reply.FAILED
	if frame.get("more") == true:
		return Reply.PART
	return Reply.DONE


## The rid of the request `frame` answers ("" for none): its `rid`, or for an error without
## one, the rid of the event it names. `rid_of_event` maps event_id to rid.
static func reply_key(frame: Dictionary, rid_of_event: Dictionary) -> String:
	var rid = frame.get("rid")
	if rid is String:
		return rid
	if rid != null:
		return str(rid)
	if frame.get("type") == "error" and frame.get("event_id") is String:
		return rid_of_event.get(frame["event_id"], "")
	return ""


## The seq to resume after once `frame` has been received and processed (SPEC §9): the
## largest seq of a `belief` or `resumed` frame, or the first `welcome`'s seq. -1: none yet.
static func advance_seq(last_seq: int, frame: Dictionary) -> int:
	var type = frame.get("type")
	if (type == "belief" or type == "resumed") and frame.get("seq") != null:
		return maxi(last_seq, int(frame["seq"]))
	if type == "welcome" and last_seq < 0:
		return int(frame.get("seq", 0))
	return last_seq


## What to send right after a `welcome` (a reconnect included): every request still
## unanswered, in the order first sent, events under their own event_id (an event already
## stored is acked as a duplicate: exactly once, SPEC §9). The filters added with subscribe()
## are not among them: the hello restored them (hello_frame's `filters`).
static func after_welcome(unanswered: Array) -> Array:
	var frames := []
	for frame in unanswered:
		frames.append(frame)
	return frames


## The filters left after an unsubscribe of `residents` (SPEC §8.3): none for null or "*";
## else each filter's list without them, a filter left with none dropped. A "*" filter is kept
## as it is (the sidecar's exclusion of those residents from it is not re-sent, see README).
static func filters_without(filters: Array, residents: Variant) -> Array:
	if residents == null or residents is String:
		return []
	var kept := []
	for filter in filters:
		var listed = filter.get("residents")
		if not (listed is Array):
			kept.append(filter)
			continue
		var left := []
		for resident in listed:
			if not (resident in residents):
				left.append(resident)
		if not left.is_empty():
			var copy: Dictionary = filter.duplicate()
			copy["residents"] = left
			kept.append(copy)
	return kept


## Seconds to wait before reconnect attempt `attempt` (0, 1, …): doubling, capped.
static func backoff(attempt: int, min_delay: float, max_delay: float) -> float:
	return minf(max_delay, min_delay * pow(2.0, attempt))


## Whether a connection closed with `code` should not be retried (SPEC §13).
static func is_fatal_close(code: int) -> bool:
	return code in FATAL_CLOSE_CODES


## The sidecar URL in a line of `credence serve`'s stdout, or "" if the line is not it.
static func sidecar_url(line: String) -> String:
	var text := line.strip_edges()
	if text.begins_with(URL_PREFIX):
		return text.substr(URL_PREFIX.length())
	return ""


# ------------------------------------------------------------------------- the belief mirror
# A mirror is a Dictionary: {"beliefs": {resident: {root: belief}}, "loading": {resident:
# {root: true}}}. CredenceBeliefMirror wraps one.


## An empty mirror.
static func mirror_new() -> Dictionary:
	return {"beliefs": {}, "loading": {}}


## The latest state of one belief from a `belief` notification (seq: the change's seq). A
## change of kind `trust` is no belief (its root is `trust:<source>`): it is left out, as the
## `beliefs` query leaves it out; the `trust` query reads trust.
static func mirror_apply(mirror: Dictionary, note: Dictionary) -> void:
	if note.get("change") == "trust":
		return
	_mirror_set(mirror, note, int(note.get("seq", 0)))
	var resident = note.get("resident")
	if mirror["loading"].has(resident):
		mirror["loading"][resident][note.get("root")] = true


## Mark the start of a `beliefs` load for `resident`: notifications that arrive before the
## reply are newer than it and win over it (mirror_end_load).
static func mirror_begin_load(mirror: Dictionary, resident: String) -> void:
	mirror["loading"][resident] = {}


## Seed the mirror from a joined `beliefs` reply (seq 0: from a query), except the roots
## notified since mirror_begin_load.
static func mirror_end_load(mirror: Dictionary, reply: Dictionary) -> void:
	var resident = reply.get("resident")
	var skip: Dictionary = mirror["loading"].get(resident, {})
	mirror["loading"].erase(resident)
	for belief in reply.get("beliefs", []):
		if not skip.has(belief.get("root")):
			_mirror_set(mirror, belief, 0)


## One mirrored belief, or an empty Dictionary if the mirror holds none.
static func mirror_get(mirror: Dictionary, resident: String, root: String) -> Dictionary:
	return mirror["beliefs"].get(resident, {}).get(root, {})


## One resident's mirrored beliefs in root order (by code point, as the sidecar orders them).
static func mirror_beliefs(mirror: Dictionary, resident: String) -> Array:
	var roots: Dictionary = mirror["beliefs"].get(resident, {})
	var keys := roots.keys()
	keys.sort()
	var out := []
	for root in keys:
		out.append(roots[root])
	return out


## The mirrored residents, sorted.
static func mirror_residents(mirror: Dictionary) -> Array:
	var keys: Array = mirror["beliefs"].keys()
	keys.sort()
	return keys


static func _mirror_set(mirror: Dictionary, source: Dictionary, seq: int) -> void:
	var resident = source.get("resident")
	if not mirror["beliefs"].has(resident):
		mirror["beliefs"][resident] = {}
	mirror["beliefs"][resident][source.get("root")] = {
		"resident": resident,
		"root": source.get("root"),
		"value": source.get("value"),
		"confidence": source.get("confidence"),
		"state": source.get("state"),
		"source_kind": source.get("source_kind"),
		"source": source.get("source"),
		"subject": source.get("subject"),
		"seq": seq,
	}
