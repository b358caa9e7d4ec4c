class_name CredenceClient
extends Node
## One logical connection to a Credence sidecar that survives disconnects (protocol/SPEC.md).
##
## Add it to a scene (or `CredenceClient.new()` + add_child), set `url` and `world`, then call
## connect_to_sidecar() (or leave `auto_connect` on). It speaks JSON text frames over
## WebSocketPeer, polled from `_process` (also while the tree is paused: the sidecar's
## keepalive pings need answers). What it owns: the hello (token, subscription, resume point);
## events acked as signals and as awaitable CredenceRequests; reconnect with backoff, resuming
## every filter held after the last seq received and resending every unanswered request,
## events under their own event_id (a stored one is acked as a duplicate: exactly once);
## paged replies joined; whole-number floats read as ints; a belief mirror.
## Every protocol decision is a CredenceProtocol function.

## Every `welcome`, the first and each after a reconnect.
signal welcomed(welcome: Dictionary)
## A `belief` notification (SPEC §8.1), after the mirror applied it.
signal belief_changed(note: Dictionary)
## The backlog of a resume has been sent (SPEC §9): `seq`, `sent`.
signal resumed(info: Dictionary)
## An event's `ack` (also delivered to its CredenceRequest).
signal acked(ack: Dictionary)
## An `error` that refused one of this client's requests (also delivered to its request).
signal refused(error: Dictionary)
## An `error` that answers no request, e.g. the fatal one before a close (SPEC §12).
signal error_received(error: Dictionary)
## The socket closed (`code` -1: no close frame). A reconnect follows unless the code is fatal.
signal disconnected(code: int, reason: String)
## The state changed (a State value).
signal state_changed(state: int)
## Every decoded frame, before the client handles it (for tools and debugging).
signal frame_received(frame: Dictionary)

## The connection's life: CLOSED (not started, closed, or refused for good), CONNECTING (the
## first attempt), OPEN (welcomed), RECONNECTING (waiting to try again, or trying).
enum State { CLOSED, CONNECTING, OPEN, RECONNECTING }

## The sidecar's `ws://host:port` (CredenceSidecar's `started` gives it). Read at every attempt.
@export var url := "ws://127.0.0.1:8765"
## The world (save game) this connection reads and writes.
@export var world := "town"
## A writer or reader token; empty in open mode.
@export var token := ""
## Receive notifications for every resident (hello `subscribe: "*"`), resumed after reconnects.
@export var subscribe_all := true
## Or only for these residents (used when `subscribe_all` is off and this is not empty).
@export var subscribe_residents := PackedStringArray()
## Resume after this change seq on the first connection too (-1: live notifications only).
@export var resume_from := -1
## Connect in `_ready`.
@export var auto_connect := false
## Reconnect after a non-fatal close, waiting min_delay · 2^attempt seconds, at most max_delay.
@export var reconnect := true
@export var min_delay := 0.2
@export var max_delay := 5.0
## Most events written and awaiting their ack; further requests wait, in order, in the client.
@export var max_in_flight := 256
## Keep `mirror` up to date from notifications.
@export var mirror_enabled := true
## Free text for the sidecar's log.
@export var client_name := CredenceProtocol.CLIENT_NAME

## The local mirror of subscribed beliefs (see CredenceBeliefMirror).
var mirror := CredenceBeliefMirror.new()
## The last `welcome`, empty before the first.
var welcome: Dictionary = {}
## The last change seq received and processed: where the next resume starts (-1: none yet).
var last_seq := -1
## A State value.
var state: int = State.CLOSED
## How many events are written and await their ack.
var in_flight: int:
	get:
		return _rid_of_event.size()

var _ws: WebSocketPeer
var _hello_sent := false
var _closing := false
## A fatal close (SPEC §13): nothing more is sent until connect_to_sidecar() again.
var _refused := false
var _attempt := 0
var _retry_at := 0
var _next_rid := 1
## Written, unanswered requests by rid, in the order written (Dictionaries keep order).
var _pending: Dictionary = {}
## Requests not written yet (waiting for room or a connection), in order.
var _backlog: Array[CredenceRequest] = []
## event_id → rid of the written, unacked events.
var _rid_of_event: Dictionary = {}
## Settled requests whose `completed` is emitted on the next `_process`.
var _settled: Array[CredenceRequest] = []
## Filters added with subscribe(), restored in every later hello (`filters`) and resumed.
var _filters: Array[Dictionary] = []


func _ready() -> void:
	process_mode = Node.PROCESS_MODE_ALWAYS
	last_seq = resume_from
	if auto_connect:
		connect_to_sidecar()


func _process(_delta: float) -> void:
	var settled := _settled
	_settled = []
	for request in settled:
		request.completed.emit(request.result)
	if state == State.RECONNECTING and _ws == null and Time.get_ticks_msec() >= _retry_at:
		_open()
	if _ws == null:
		return
	_ws.poll()
	var ready_state := _ws.get_ready_state()
	if ready_state == WebSocketPeer.STATE_OPEN and not _hello_sent:
		_hello_sent = true
		var hello := CredenceProtocol.hello_frame(
			world, token, _subscription(), _filters, last_seq, client_name
		)
		_write(hello)
	# Read whatever arrived, also once closing or closed: the error frame before a fatal close
	# (SPEC §12) and the last acks before a shutdown come just ahead of the close.
	while _ws != null and _ws.get_available_packet_count() > 0:
		_receive(_ws.get_packet())
	if _ws != null and ready_state == WebSocketPeer.STATE_CLOSED:
		_on_closed(_ws.get_close_code(), _ws.get_close_reason())


func _exit_tree() -> void:
	if _ws != null:
		_ws.close(1000, "client left the tree")


## Open the connection (again, after close()). Resolve with `welcomed`, or watch `state`.
func connect_to_sidecar() -> void:
	_closing = false
	_refused = false
	_attempt = 0
	_open()


## Close for good: every unanswered request completes with an error of code "closed".
func close() -> void:
	_closing = true
	if _ws != null:
		_ws.close(1000, "client closed")
		_ws = null
	_fail_all("closed", "the client was closed")
	_set_state(State.CLOSED)


## Send a world event (SPEC §7): `event` holds event_id, day, kind and its fields (or a `type`
## of trust/propose/register/schema). The request completes with its ack or its error; across
## a reconnect it is resent under the same event_id.
func send_event(event: Dictionary) -> CredenceRequest:
	return _request(CredenceProtocol.event_frame(event, _rid()))


## Set how much `resident` trusts `source` (an event of kind trust, SPEC §7.8).
func set_trust(
	event_id: String, day: float, resident: String, source: String, value: float, topic := ""
) -> CredenceRequest:
	var event := {"event_id": event_id, "day": day, "kind": "trust", "resident": resident}
	event.merge({"source": source, "value": value})
	if topic != "":
		event["topic"] = topic
	return send_event(event)


## Name residents and label actions per language (an event of kind register, SPEC §7.12):
## `event` holds event_id, day and `residents` and/or `actions`.
func register_names(event: Dictionary) -> CredenceRequest:
	var frame := event.duplicate()
	frame["kind"] = "register"
	return send_event(frame)


## Declare the world's claim roots (an event of kind schema, SPEC §7.11).
func declare_schema(event: Dictionary) -> CredenceRequest:
	var frame := event.duplicate()
	frame["kind"] = "schema"
	return send_event(frame)


## Any query frame (`type` and its fields); the reply's parts are joined (SPEC §11).
func query(type: String, fields: Dictionary = {}) -> CredenceRequest:
	return _request(CredenceProtocol.request_frame(type, fields, _rid()))


## A resident's beliefs (SPEC §10.1); `filters` may hold after, root, prefix, states, people,
## places, min_confidence, limit. A long memory a page at a time: {"limit": 1000}, then
## {"after": <the last root received>, "limit": 1000} until a page holds fewer.
func beliefs(resident: String, filters: Dictionary = {}) -> CredenceRequest:
	var fields := filters.duplicate()
	fields["resident"] = resident
	return query("beliefs", fields)


## One belief with its evidence and history (SPEC §10.2); `limit` > 0: only the latest `limit`
## of each (evidence_total and history_total count them all).
func explain(resident: String, root: String, limit := 0) -> CredenceRequest:
	var fields := {"resident": resident, "root": root}
	if limit > 0:
		fields["limit"] = limit
	return query("explain", fields)


## Who believes what about one root (SPEC §10.3).
func distribution(root: String) -> CredenceRequest:
	return query("distribution", {"root": root})


## A resident's beliefs as prompt text (SPEC §10.4): `budget` 0 and `lang` "" take the
## defaults (2000, "en"); `focus` may hold people, places, roots, topics (lists of strings).
func narrative(
	resident: String, budget := 0, lang := "", focus: Dictionary = {}
) -> CredenceRequest:
	var fields := {"resident": resident}
	if budget > 0:
		fields["budget"] = budget
	if lang != "":
		fields["lang"] = lang
	if not focus.is_empty():
		fields["focus"] = focus
	return query("narrative", fields)


## One page of a belief graph (SPEC §10.5): one resident's beliefs, one root, or one belief.
## At most `limit` event nodes (1–1000; 0: the default, 100) after `after`, the `next` of the
## previous page's result (null on the last page): pass it back to get the next page.
func graph(resident := "", root := "", after := "", limit := 0) -> CredenceRequest:
	var fields := {}
	if resident != "":
		fields["resident"] = resident
	if root != "":
		fields["root"] = root
	if after != "":
		fields["after"] = after
	if limit > 0:
		fields["limit"] = limit
	return query("graph", fields)


## One page of a resident's trust table (SPEC §10.6), for one source or all (""): at most
## `limit` entries (1–1000; 0: the default, 100) in (source, topic) order after `after`, the
## `next` of the previous page's result (null on the last page): pass it back for the next.
func trust(resident: String, source := "", after := "", limit := 0) -> CredenceRequest:
	var fields := {"resident": resident}
	if source != "":
		fields["source"] = source
	if after != "":
		fields["after"] = after
	if limit > 0:
		fields["limit"] = limit
	return query("trust", fields)


## The worlds this token may open (SPEC §10.7): every one, or with `limit` > 0 a page after
## `after`; the reply's `next` is the `after` of the next page (null on the last).
func worlds(after := "", limit := 0) -> CredenceRequest:
	var fields := {}
	if after != "":
		fields["after"] = after
	if limit > 0:
		fields["limit"] = limit
	return query("worlds", fields)


## Copy this world into the new world `into`, its log up to event seq `at` (-1: all of it).
func fork(into: String, at := -1) -> CredenceRequest:
	var fields := {"into": into}
	if at >= 0:
		fields["at"] = at
	return query("fork", fields)


## Delete `world` and everything in it (naming it is the confirmation; writer only).
func delete_world(name: String) -> CredenceRequest:
	return query("delete", {"world": name})


## Add a notification filter (SPEC §8.2): residents ("*" or a list), roots, changes, crossing.
## Kept, and restored in the hello of every reconnect (`hello.filters`), so the changes it
## matches while the client is away are resumed too, each once (SPEC §9).
func subscribe(filter: Dictionary) -> CredenceRequest:
	var request := query("subscribe", filter)
	request.completed.connect(
		func(_reply: Dictionary) -> void:
			if request.ok:
				_filters.append(filter.duplicate(true))
	)
	return request


## Remove residents from every filter (SPEC §8.3), or every filter (null or "*").
func unsubscribe(residents: Variant = null) -> CredenceRequest:
	var request := query("unsubscribe", {"residents": residents})
	request.completed.connect(
		func(_reply: Dictionary) -> void:
			if request.ok:
				_filters.assign(CredenceProtocol.filters_without(_filters, residents))
	)
	return request


## Load a resident's beliefs into the mirror (notifications that arrive meanwhile win).
func load_mirror(resident: String) -> CredenceRequest:
	mirror.begin_load(resident)
	var request := beliefs(resident)
	request.completed.connect(
		func(reply: Dictionary) -> void:
			if request.ok:
				mirror.end_load(reply)
	)
	return request


# ---------------------------------------------------------------------------- internals


func _subscription() -> Variant:
	if subscribe_all:
		return "*"
	if subscribe_residents.is_empty():
		return null
	return Array(subscribe_residents)


func _rid() -> String:
	_next_rid += 1
	return "g%d" % (_next_rid - 1)


func _set_state(value: int) -> void:
	if state != value:
		state = value
		state_changed.emit(value)


func _open() -> void:
	_set_state(State.CONNECTING if _attempt == 0 and welcome.is_empty() else State.RECONNECTING)
	_ws = WebSocketPeer.new()
	# JSON replies are not held to the 60 KiB bound of msgpack ones (SPEC §2, §17).
	_ws.inbound_buffer_size = 1 << 20
	_ws.outbound_buffer_size = 1 << 20
	_ws.max_queued_packets = 4096
	_hello_sent = false
	var err := _ws.connect_to_url(url)
	if err != OK:
		_ws = null
		_on_closed(-1, "connect_to_url failed: %s" % error_string(err))


func _write(frame: Dictionary) -> bool:
	if _ws == null or _ws.get_ready_state() != WebSocketPeer.STATE_OPEN:
		return false
	return _ws.send_text(JSON.stringify(frame)) == OK


func _receive(packet: PackedByteArray) -> void:
	var parsed = JSON.parse_string(packet.get_string_from_utf8())
	if not (parsed is Dictionary):
		error_received.emit({"type": "error", "code": "bad_frame", "message": "not a JSON object"})
		return
	var frame: Dictionary = CredenceProtocol.whole_numbers(parsed)
	frame_received.emit(frame)
	last_seq = CredenceProtocol.advance_seq(last_seq, frame)
	var type = frame.get("type")
	if type == "welcome":
		_on_welcome(frame)
	elif type == "belief":
		if mirror_enabled:
			mirror.apply(frame)
		belief_changed.emit(frame)
	elif type == "resumed":
		resumed.emit(frame)
	else:
		_answer(frame)


func _on_welcome(frame: Dictionary) -> void:
	welcome = frame
	_attempt = 0
	_set_state(State.OPEN)
	var unanswered := []
	for rid in _pending:
		_pending[rid].parts.clear()  # a reply cut off by the disconnect comes again whole
		unanswered.append(_pending[rid].frame)
	for sent in CredenceProtocol.after_welcome(unanswered):
		_write(sent)
	_pump()
	welcomed.emit(frame)


func _answer(frame: Dictionary) -> void:
	var key := CredenceProtocol.reply_key(frame, _rid_of_event)
	if not _pending.has(key):
		if frame.get("type") == "error":
			error_received.emit(frame)
		return
	var request: CredenceRequest = _pending[key]
	var verdict := CredenceProtocol.classify_reply(frame, request.event_id != "")
	if verdict == CredenceProtocol.Reply.HELD:
		request.parts.clear()  # not stored; resent after the reconnect that follows
	elif verdict == CredenceProtocol.Reply.PART:
		request.parts.append(frame)
	elif verdict == CredenceProtocol.Reply.FAILED:
		_settle(request, false, frame)
		refused.emit(frame)
	else:
		request.parts.append(frame)
		var reply := CredenceProtocol.join_parts(request.parts)
		_settle(request, true, reply)
		if reply.get("type") == "ack":
			acked.emit(reply)


func _request(frame: Dictionary) -> CredenceRequest:
	var request := CredenceRequest.new(frame, frame["rid"], CredenceProtocol.event_id_of(frame))
	if _closing or _refused:
		_finish(request, false, _local_error("closed", "the client is closed", request))
		return request
	if request.event_id != "" and _rid_of_event.has(request.event_id):
		var message := "event %s is already in flight" % request.event_id
		_finish(request, false, _local_error("invalid_event", message, request))
		return request
	var size := JSON.stringify(frame).to_utf8_buffer().size()
	var limit: int = welcome.get("max_frame", 262144)
	if size > limit:
		var too_big := "frame of %d bytes exceeds %d" % [size, limit]
		_finish(request, false, _local_error("too_large", too_big, request))
		return request
	_backlog.append(request)
	_pump()
	return request


## Write backlogged requests in order while connected and fewer than max_in_flight events
## await their ack (a query behind a waiting event waits too: replies come in request order).
func _pump() -> void:
	if state != State.OPEN:
		return
	while not _backlog.is_empty():
		var request: CredenceRequest = _backlog[0]
		if request.event_id != "" and _rid_of_event.size() >= max_in_flight:
			return
		if not _write(request.frame):
			return
		_backlog.pop_front()
		_pending[request.rid] = request
		if request.event_id != "":
			_rid_of_event[request.event_id] = request.rid


func _settle(request: CredenceRequest, success: bool, answer: Dictionary) -> void:
	_pending.erase(request.rid)
	if request.event_id != "":
		_rid_of_event.erase(request.event_id)
	_finish(request, success, answer)
	_pump()


func _finish(request: CredenceRequest, success: bool, answer: Dictionary) -> void:
	if request.finish(success, answer):
		_settled.append(request)


func _local_error(code: String, message: String, request: CredenceRequest) -> Dictionary:
	var error := {"type": "error", "code": code, "message": message, "rid": request.rid}
	if request.event_id != "":
		error["event_id"] = request.event_id
	return error


func _fail_all(code: String, message: String) -> void:
	var all: Array[CredenceRequest] = []
	for rid in _pending:
		all.append(_pending[rid])
	all.append_array(_backlog)
	_pending.clear()
	_backlog.clear()
	_rid_of_event.clear()
	for request in all:
		_finish(request, false, _local_error(code, message, request))


func _on_closed(code: int, reason: String) -> void:
	_ws = null
	disconnected.emit(code, reason)
	if _closing:
		return
	if CredenceProtocol.is_fatal_close(code) or not reconnect:
		_refused = true
		_fail_all(reason if reason != "" else "closed", "connection closed (%d)" % code)
		_set_state(State.CLOSED)
		return
	# Written requests stay pending (resent first after the welcome), in their order.
	_set_state(State.RECONNECTING)
	var delay := CredenceProtocol.backoff(_attempt, min_delay, max_delay)
	_attempt += 1
	_retry_at = Time.get_ticks_msec() + int(delay * 1000.0)
