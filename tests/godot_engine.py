"""The few Godot engine objects the addon's client node uses, for tests/gdscript.py's Runtime.

``WebSocketPeer`` here is a real WebSocket client (``websockets.sync``, a reader thread) behind
Godot's polled API as its documentation describes it (and ``OS``, ``Thread``, a pipe's
``FileAccess`` for the sidecar launcher): ``connect_to_url`` starts connecting and
returns at once, and only ``poll()`` moves what arrived (messages, the open, the close) into
what ``get_ready_state``/``get_available_packet_count``/``get_packet`` show, so a frame that
arrived just before the close is still there to read after ``poll()`` says CLOSED. ``JSON``
parses as Godot 4's ``JSON.parse_string`` does: every number a float.

This is a model of the engine, written for these tests: it is what they can check the GDScript
against, not Godot itself (the addon's README says so).
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
import time
from collections import deque
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

__all__ = ["engine"]

OK = 0
FAILED = 1


class WebSocketPeer:
    STATE_CONNECTING, STATE_OPEN, STATE_CLOSING, STATE_CLOSED = 0, 1, 2, 3

    @classmethod
    def new(cls) -> WebSocketPeer:
        return cls()

    def __init__(self) -> None:
        self.inbound_buffer_size = 65535
        self.outbound_buffer_size = 65535
        self.max_queued_packets = 2048
        self._events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._packets: deque[bytes | str] = deque()
        self._state = self.STATE_CLOSED
        self._close: tuple[int, str] = (-1, "")
        self._ws: ClientConnection | None = None
        self._last_text = False

    def connect_to_url(self, url: str) -> int:
        self._state = self.STATE_CONNECTING
        threading.Thread(target=self._run, args=(url,), daemon=True).start()
        return OK

    def _run(self, url: str) -> None:
        try:
            ws = connect(url, proxy=None, compression=None, max_size=self.inbound_buffer_size,
                         open_timeout=5)  # fmt: skip
        except Exception:  # refused, reset, timed out: Godot reports CLOSED, code -1
            self._events.put(("closed", (-1, "")))
            return
        with ws:
            self._ws = ws
            self._events.put(("open", None))
            try:
                while True:
                    self._events.put(("message", ws.recv()))
            except ConnectionClosed:
                pass
        received = ws.protocol.close_rcvd  # None: no close frame (Godot's -1)
        code = received.code if received is not None else -1
        reason = received.reason if received is not None else ""
        self._events.put(("closed", (code, reason)))

    def poll(self) -> None:
        while True:
            try:
                kind, value = self._events.get_nowait()
            except queue.Empty:
                return
            if kind == "open":
                self._state = self.STATE_OPEN
            elif kind == "message":
                self._packets.append(value)
            else:
                self._state, self._close = self.STATE_CLOSED, value

    def get_ready_state(self) -> int:
        return self._state

    def get_available_packet_count(self) -> int:
        return len(self._packets)

    def get_packet(self) -> bytes:
        message = self._packets.popleft()
        self._last_text = isinstance(message, str)
        return message.encode("utf-8") if isinstance(message, str) else message

    def was_string_packet(self) -> bool:
        return self._last_text

    def send_text(self, text: str) -> int:
        if self._state != self.STATE_OPEN or self._ws is None:
            return FAILED
        try:
            self._ws.send(text)
        except ConnectionClosed:
            return FAILED
        return OK

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Start the closing handshake and return at once, as Godot's close() does."""
        ws = self._ws
        if ws is not None:
            self._state = self.STATE_CLOSING

            def handshake() -> None:
                with contextlib.suppress(Exception):
                    ws.close(code, reason)

            threading.Thread(target=handshake, daemon=True).start()

    def get_close_code(self) -> int:
        return self._close[0]

    def get_close_reason(self) -> str:
        return self._close[1]


class _Json:
    @staticmethod
    def stringify(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    @staticmethod
    def parse_string(text: str) -> Any:
        try:
            return json.loads(text, parse_int=float)
        except ValueError:
            return None


class _Time:
    @staticmethod
    def get_ticks_msec() -> int:
        return int(time.monotonic() * 1000)


class _Node:
    PROCESS_MODE_ALWAYS = 3


ERR_FILE_EOF = 18


class _Pipe:
    """FileAccess on a process pipe: get_line() blocks for a line; EOF sets the error."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._error = OK

    def is_open(self) -> bool:
        return not self._stream.closed

    def get_error(self) -> int:
        return self._error

    def get_line(self) -> str:
        line = self._stream.readline()
        if not line:
            self._error = ERR_FILE_EOF
        return str(line.decode("utf-8", errors="replace").rstrip("\r\n"))


class _Os:
    """OS: processes started by the script, by pid."""

    def __init__(self) -> None:
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    def execute_with_pipe(self, path: str, arguments: list[str]) -> dict[str, Any]:
        try:
            proc = subprocess.Popen([path, *arguments], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        except OSError:
            return {}
        self.processes[proc.pid] = proc
        return {"stdio": _Pipe(proc.stdout), "stderr": _Pipe(proc.stderr), "pid": proc.pid}

    def create_process(self, path: str, arguments: list[str]) -> int:
        try:
            proc = subprocess.Popen([path, *arguments], stdout=subprocess.DEVNULL)
        except OSError:
            return -1
        self.processes[proc.pid] = proc
        return proc.pid

    def is_process_running(self, pid: int) -> bool:
        proc = self.processes.get(pid)
        return proc is not None and proc.poll() is None

    def kill(self, pid: int) -> int:
        proc = self.processes.get(pid)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        return OK


class _Thread:
    @classmethod
    def new(cls) -> _Thread:
        return cls()

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None

    def start(self, target: Any) -> int:
        self._thread = threading.Thread(target=target, daemon=True)
        self._thread.start()
        return OK

    def is_started(self) -> bool:
        return self._thread is not None

    def wait_to_finish(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=30)


class _ProjectSettings:
    def __init__(self, user_dir: str) -> None:
        self.user_dir = user_dir

    def globalize_path(self, path: str) -> str:
        return path.replace("user://", self.user_dir.rstrip("/") + "/", 1)


def engine(user_dir: str = "/tmp") -> dict[str, Any]:
    """The globals the addon's node scripts use, fresh for one Runtime (``user://`` is
    ``user_dir``)."""
    return {
        "OS": _Os(),
        "Thread": _Thread,
        "ProjectSettings": _ProjectSettings(user_dir),
        "WebSocketPeer": WebSocketPeer,
        "JSON": _Json,
        "Time": _Time,
        "Node": _Node,
        "OK": OK,
        "error_string": lambda err: f"error {err}",
        "__deferred__": [],
    }
