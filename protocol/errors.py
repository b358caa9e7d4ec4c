"""Stable wire error codes and close codes, and the one exception that carries them.

Exception tree::

    ProtocolError        the peer sent something we refuse; carries an ErrorCode
                         (and, when fatal, the close code to end the connection with)

Our own misuse of the API raises ordinary ``TypeError``/``AssertionError`` instead, so the two
are never confused (h11's Remote/LocalProtocolError split).
"""

from __future__ import annotations

from enum import IntEnum, StrEnum

__all__ = ["CloseCode", "ErrorCode", "ProtocolError"]


class ErrorCode(StrEnum):
    """The ``code`` of an ``error`` frame. Stable: clients switch on these."""

    BAD_FRAME = "bad_frame"  # not a map / malformed msgpack or JSON / breaks the type rules
    UNKNOWN_TYPE = "unknown_type"  # frame ``type`` this server does not know
    INVALID_FRAME = "invalid_frame"  # known type, bad or missing field
    INVALID_EVENT = "invalid_event"  # event refused whole, nothing of it stored
    CONTRACT_VIOLATION = "contract_violation"  # event breaks the epistemic guard
    CLOCK_BACKWARDS = "clock_backwards"  # event dated before the world's clock; not stored
    SCHEMA_VIOLATION = "schema_violation"  # claim refused by the world's root schema (reason)
    TOO_MANY_RESIDENTS = "too_many_residents"  # event names more than welcome.max_residents
    HELLO_REQUIRED = "hello_required"  # first frame was not ``hello`` (fatal)
    UNAUTHORIZED = "unauthorized"  # missing/wrong token or another world's token (fatal)
    FORBIDDEN = "forbidden"  # read-only token tried to write
    UNSUPPORTED_PROTOCOL = "unsupported_protocol"  # ``hello.protocol`` not 1 (fatal)
    TOO_LARGE = "too_large"  # a reply could not fit, or an inbound field is too long
    NOT_FOUND = "not_found"  # unknown resident / belief
    SLOW_CONSUMER = "slow_consumer"  # stopped reading notifications (fatal; resume later)
    OVERLOADED = "overloaded"  # writer queue full; retry the event later
    SHUTTING_DOWN = "shutting_down"  # stopping; the event was not started, resend it later
    LIMIT_EXCEEDED = "limit_exceeded"  # a per-connection bound (e.g. subscriptions) is reached
    WORLD_BUSY = "world_busy"  # a fork/import is building that world; resend after its reply
    INTERNAL_ERROR = "internal_error"  # a bug on our side; the event was not stored


class CloseCode(IntEnum):
    """WebSocket close codes the sidecar uses (4000–4999 are ours)."""

    NORMAL = 1000
    GOING_AWAY = 1001  # server shutting down; reconnect and resume
    MESSAGE_TOO_BIG = 1009  # inbound frame over the size limit
    TRY_AGAIN_LATER = 1013  # the world's file cannot be opened now (hello); reconnect later
    HELLO_REQUIRED = 4000
    UNAUTHORIZED = 4001
    UNSUPPORTED_PROTOCOL = 4002
    HELLO_TIMEOUT = 4003
    SLOW_CONSUMER = 4008
    INTERNAL_ERROR = 4011


#: Longest ``message`` an error frame carries; longer ones are cut (the frame must fit).
MAX_MESSAGE = 1000

#: Errors that end the connection, and the close code each one uses.
FATAL: dict[ErrorCode, CloseCode] = {
    ErrorCode.HELLO_REQUIRED: CloseCode.HELLO_REQUIRED,
    ErrorCode.UNAUTHORIZED: CloseCode.UNAUTHORIZED,
    ErrorCode.UNSUPPORTED_PROTOCOL: CloseCode.UNSUPPORTED_PROTOCOL,
    ErrorCode.SLOW_CONSUMER: CloseCode.SLOW_CONSUMER,
}


class ProtocolError(Exception):
    """The peer sent something the protocol refuses."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        rid: object = None,
        event_id: str | None = None,
        close: CloseCode | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.rid = rid
        self.event_id = event_id
        self._close = close
        self.reason = reason

    @property
    def close_code(self) -> CloseCode | None:
        """The close code this error ends the connection with (``None``: not fatal)."""
        return self._close if self._close is not None else FATAL.get(self.code)

    def to_frame(self) -> dict[str, object]:
        message = self.message
        if len(message) > MAX_MESSAGE:  # it may quote the peer's input, which can be huge
            message = message[: MAX_MESSAGE - 1] + "…"
        frame: dict[str, object] = {"type": "error", "code": str(self.code), "message": message}
        if self.rid is not None:
            frame["rid"] = self.rid
        if self.event_id is not None:
            frame["event_id"] = self.event_id
        if self.reason is not None:
            frame["reason"] = self.reason
        return frame
