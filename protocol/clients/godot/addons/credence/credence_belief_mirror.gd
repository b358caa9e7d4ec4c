class_name CredenceBeliefMirror
extends RefCounted
## The latest known state of each belief of the residents a CredenceClient follows: applied
## from every `belief` notification, seeded by CredenceClient.load_mirror(resident) (a `beliefs`
## query; notifications that arrive while it loads win over it). Each belief is a Dictionary
## with resident, root, value, confidence, state, source_kind, source, subject and seq (the
## change that set it; 0 when it came from a query). The logic is CredenceProtocol's mirror_*.

var _state: Dictionary = CredenceProtocol.mirror_new()


## Apply one `belief` notification.
func apply(note: Dictionary) -> void:
	CredenceProtocol.mirror_apply(_state, note)


## Mark the start of a load for `resident` (see CredenceClient.load_mirror).
func begin_load(resident: String) -> void:
	CredenceProtocol.mirror_begin_load(_state, resident)


## Seed from a joined `beliefs` reply.
func end_load(reply: Dictionary) -> void:
	CredenceProtocol.mirror_end_load(_state, reply)


## One belief, or an empty Dictionary.
func get_belief(resident: String, root: String) -> Dictionary:
	return CredenceProtocol.mirror_get(_state, resident, root)


## One resident's beliefs in root order.
func beliefs(resident: String) -> Array:
	return CredenceProtocol.mirror_beliefs(_state, resident)


## Every resident with a mirrored belief, sorted.
func residents() -> Array:
	return CredenceProtocol.mirror_residents(_state)


## Forget everything.
func clear() -> void:
	_state = CredenceProtocol.mirror_new()
