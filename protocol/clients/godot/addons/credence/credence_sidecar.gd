class_name CredenceSidecar
extends Node
## Launches and supervises a local `credence serve` for the game (SPEC §1).
##
## With `port` 0 (the default) the system picks a free port: the process is started with
## OS.execute_with_pipe (Godot 4.2+), a thread reads its stdout until the one line
## `CREDENCE_URL=ws://127.0.0.1:PORT`, and `started(url)` is emitted. Another thread drains
## its stderr (the sidecar's log; forwarded as `log_line`) so the pipe never fills. With a
## fixed `port` the process is started with OS.create_process and `started` is emitted at
## once with the known URL (the client's reconnect covers the moment before it listens).
## If the process exits and `restart` is on, it is started again after `restart_delay`
## seconds, on the same database (and `started` gives the new URL: connect it to
## CredenceClient.url). The process is killed when this node leaves the tree.

## The sidecar is running and listening at `url`.
signal started(url: String)
## The process exited (or could not be started); a restart follows if `restart` is on.
signal stopped(reason: String)
## One line the sidecar logged on stderr.
signal log_line(line: String)

## The `credence` executable: on PATH, or a full path (e.g. a virtualenv's bin/credence).
@export var command := "credence"
## The SQLite file of the worlds (relative paths are the process's working directory's).
@export var database := "user://credence.db"
## 0: let the system pick a port and read it from stdout.
@export var port := 0
## Further arguments for `credence serve` (e.g. "--token", "secret").
@export var extra_arguments := PackedStringArray()
## Start in `_ready`.
@export var auto_start := true
## Start the sidecar again when it exits.
@export var restart := true
@export var restart_delay := 1.0

## The running process's id (-1: none).
var pid := -1
## Where it listens, once known ("" before).
var url := ""

var _stdout_thread: Thread
var _stderr_thread: Thread
var _stopping := false
var _restart_at := -1


func _ready() -> void:
	process_mode = Node.PROCESS_MODE_ALWAYS
	if auto_start:
		start()


func _process(_delta: float) -> void:
	if pid >= 0 and not OS.is_process_running(pid):
		pid = -1
		url = ""
		_join_threads()
		stopped.emit("the sidecar exited")
		if restart and not _stopping:
			_restart_at = Time.get_ticks_msec() + int(restart_delay * 1000.0)
	if pid < 0 and _restart_at >= 0 and Time.get_ticks_msec() >= _restart_at:
		_restart_at = -1
		start()


func _exit_tree() -> void:
	stop()


## The arguments `credence serve` is started with.
func arguments() -> PackedStringArray:
	var args := PackedStringArray(["serve", "--port", str(port)])
	args.append("--db")
	args.append(ProjectSettings.globalize_path(database))
	args.append_array(extra_arguments)
	return args


## Start the process (if none runs). `started` follows once its URL is known.
func start() -> void:
	if pid >= 0:
		return
	_stopping = false
	if port > 0:
		pid = OS.create_process(command, arguments())
		if pid < 0:
			stopped.emit("could not start %s" % command)
			return
		url = "ws://127.0.0.1:%d" % port
		started.emit(url)
		return
	var io := OS.execute_with_pipe(command, arguments())
	if io.is_empty():
		stopped.emit("could not start %s" % command)
		return
	pid = io["pid"]
	_stdout_thread = Thread.new()
	_stdout_thread.start(_read_stdout.bind(io["stdio"]))
	_stderr_thread = Thread.new()
	_stderr_thread.start(_read_stderr.bind(io["stderr"]))


## Stop the process and do not restart it. (OS.kill ends it at once; everything the sidecar
## acked is committed, SPEC §14.1, so nothing acknowledged is lost.)
func stop() -> void:
	_stopping = true
	_restart_at = -1
	if pid >= 0:
		OS.kill(pid)
		pid = -1
	_join_threads()


func _join_threads() -> void:
	for thread in [_stdout_thread, _stderr_thread]:
		if thread != null and thread.is_started():
			thread.wait_to_finish()
	_stdout_thread = null
	_stderr_thread = null


# Runs on _stdout_thread: the URL line, then whatever else (nothing, SPEC §1) until EOF.
func _read_stdout(pipe: FileAccess) -> void:
	while pipe.is_open() and pipe.get_error() == OK:
		var found := CredenceProtocol.sidecar_url(pipe.get_line())
		if found != "":
			_on_url.call_deferred(found)


# Runs on _stderr_thread: the log, line by line, until EOF.
func _read_stderr(pipe: FileAccess) -> void:
	while pipe.is_open() and pipe.get_error() == OK:
		var line := pipe.get_line()
		if line != "":
			log_line.emit.call_deferred(line)


func _on_url(found: String) -> void:
	url = found
	started.emit(found)
