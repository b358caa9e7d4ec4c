"""The few Godot engine objects the addon's client node uses, for tests/gdscript.py's Runtime.

``WebSocketPeer`` here is a real WebSocket client (``websockets.sync``, a reader thread) behind
Godot's polled API as its documentation describes it: ``connect_to_url`` starts connecting and
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


def engine() -> dict[str, Any]:
    """The globals the client node's script uses, fresh for one Runtime."""
    return {
        "WebSocketPeer": WebSocketPeer,
        "JSON": _Json,
        "Time": _Time,
        "Node": _Node,
        "OK": OK,
        "error_string": lambda err: f"error {err}",
        "__deferred__": [],
    }
