extends Control
## The Credence demo: starts a sidecar (CredenceSidecar, `credence serve --port 0`), connects
## a CredenceClient to the URL it prints, plays a short story (Bo tells Mira the well is
## poisoned; she sees otherwise), and shows the acks, the belief notifications as they arrive,
## Mira's narrative (the text an NPC's LLM reads) and the belief mirror.
##
## Run it twice: the second run sends the same event_ids, and every one is acked as a
## duplicate: resending is safe, each event applies exactly once.

const STORY := [
	{
		"kind": "register",
		"event_id": "demo-names",
		"day": 1.0,
		"residents":
		[
			{"resident": "mira", "names": {"en": "Mira", "zh-Hant": "米拉"}},
			{"resident": "bo", "names": {"en": "Bo", "zh-Hant": "阿博"}},
		],
		"actions": [{"action": "fetch_water", "names": {"en": "fetch water", "zh-Hant": "打水"}}],
	},
	{
		"kind": "say",
		"event_id": "demo-1",
		"day": 1.0,
		"speaker": "bo",
		"listeners": ["mira"],
		"claim": {"root": "water:well", "value": "poisoned"},
		"subject": "The well is poisoned",
		"topic": "well",
	},
	{
		"kind": "observe",
		"event_id": "demo-2",
		"day": 3.5,
		"witnesses": ["mira"],
		"claim": {"root": "water:well", "value": "clean"},
		"subject": "The doctor drank from the well and is fine",
		"places": ["well"],
	},
	{
		"kind": "observe",
		"event_id": "demo-3",
		"day": 4.0,
		"witnesses": ["mira"],
		"claim": {"root": "water:well", "value": "clean"},
		"subject": "Mira drew a bucket; the water is clear",
	},
	{
		"kind": "act",
		"event_id": "demo-4",
		"day": 4.0,
		"actor": "mira",
		"action": "fetch_water",
		"status": "completed",
	},
]

var _played := false

@onready var _sidecar: CredenceSidecar = $Sidecar
@onready var _client: CredenceClient = $Client
@onready var _log: RichTextLabel = $Log


func _ready() -> void:
	_sidecar.started.connect(_on_sidecar_started)
	_sidecar.stopped.connect(func(reason: String) -> void: _say("sidecar stopped: " + reason))
	_client.welcomed.connect(_on_welcomed)
	_client.belief_changed.connect(_on_belief)
	_client.disconnected.connect(
		func(code: int, _reason: String) -> void: _say("disconnected (%d)" % code)
	)
	_say("starting `credence serve --port 0` …")


func _on_sidecar_started(url: String) -> void:
	_say("sidecar listening at " + url)
	_client.url = url  # a restarted sidecar may listen on another port
	if _client.state == CredenceClient.State.CLOSED:
		_client.connect_to_sidecar()


func _on_welcomed(welcome: Dictionary) -> void:
	_say("welcome: world %s, seq %d, role %s" % [welcome["world"], welcome["seq"], welcome["role"]])
	if not _played:
		_played = true
		_play()


func _on_belief(note: Dictionary) -> void:
	_say(
		(
			"  belief #%d %s %s: %s → %s (%d, %s)"
			% [
				note["seq"],
				note["resident"],
				note["root"],
				note["change"],
				str(note["value"]),
				note["confidence"],
				note["state"],
			]
		)
	)


func _play() -> void:
	for event in STORY:
		var request := _client.send_event(event)
		var result: Dictionary = await request.completed
		if request.ok:
			_say(
				(
					"ack %s: %d changes, duplicate %s"
					% [result["event_id"], result["changes"], result["duplicate"]]
				)
			)
		else:
			_say("refused %s: %s %s" % [event["event_id"], result["code"], result["message"]])
	var narrative := _client.narrative("mira", 600, "en", {"places": ["well"]})
	var reply: Dictionary = await narrative.completed
	if narrative.ok:
		_say("\nMira's narrative:\n" + reply["text"] + "\n")
	var mirror_load := _client.load_mirror("mira")
	await mirror_load.completed
	for belief in _client.mirror.beliefs("mira"):
		_say("mirror: %s = %s (%d)" % [belief["root"], str(belief["value"]), belief["confidence"]])


func _say(line: String) -> void:
	_log.add_text(line + "\n")
	print(line)
