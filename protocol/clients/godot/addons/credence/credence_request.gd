class_name CredenceRequest
extends RefCounted
## One request in flight: an event awaiting its `ack`, or a query awaiting its (joined) reply.
##
## Every CredenceClient method that sends returns one. Await it where you need the answer:
##     var request := client.send_event({...})
##     var result: Dictionary = await request.completed
##     if request.ok: print(result["seq"]) else: print(result["code"])
## or connect to `completed`, or just read `done`/`ok`/`result` later. `completed` is emitted
## once, from the client's next `_process` after the answer arrived (never from inside the call
## that created the request), so an `await` right after the call always sees it.

## The ack or joined reply (`ok` true), or the `error` frame that refused it (`ok` false; a
## local failure has `code` "closed" or "too_large").
signal completed(result: Dictionary)

## The frame as sent (with its rid); resent as is after a reconnect.
var frame: Dictionary
var rid: String
## The event_id for an event ("" for a query).
var event_id: String
var done := false
var ok := false
var result: Dictionary = {}
## The parts received so far of a paged reply (cleared on a reconnect: it comes again whole).
var parts: Array = []


func _init(sent: Dictionary, request_id: String, event: String) -> void:
	frame = sent
	rid = request_id
	event_id = event


## Settle the request (once); returns false if it was settled already. The client then emits
## `completed` from its next `_process` (it holds the request until then).
func finish(success: bool, answer: Dictionary) -> bool:
	if done:
		return false
	done = true
	ok = success
	result = answer
	return true
