"""The sans-I/O Session: the connection state machine, tested without an event loop.

Hello and auth, the state table, subscriptions and their bounds (issue 9 item 4), resume
catch-up, held-back live changes, and outbox accounting (slow consumer, room hysteresis).
"""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from protocol import ErrorCode, ProtocolError, parse_client_frame
from sidecar.engine import Change, ChangeKind, SourceKind, State
from sidecar.server.auth import Auth, Role
from sidecar.server.session import (
    TRANSITIONS,
    Limits,
    Query,
    Reply,
    Session,
    SessionState,
    SessionStateError,
    Submit,
)

OPEN_AUTH = Auth()
TOKENS = Auth.from_specs(["town=w"], ["town=r"])


def hello(**extra: Any) -> dict[str, Any]:
    return {"type": "hello", "protocol": 1, "world": "town", **extra}


def change(seq: int, resident: str = "mira", root: str = "water:well", **extra: Any) -> Change:
    fields: dict[str, Any] = dict(
        resident=resident, root=root, kind=ChangeKind.FORMED, confidence_before=None,
        confidence_after=80, state_before=None, state_after=State.INFLUENCING,
        value_before=None, value_after="clean", source_kind=SourceKind.FIRSTHAND,
        source_resident_id=None, event_id=f"e{seq}", day=1.0, seq=seq,
    )  # fmt: skip
    fields.update(extra)
    return Change(**fields)


def opened(latest: int = 0, auth: Auth = OPEN_AUTH, **hello_extra: Any) -> Session:
    s = Session()
    s.hello(hello(**hello_extra), as_json=False, auth=auth)
    assert not s.welcome(latest, auth_open=auth.open)
    return s


def sent(s: Session) -> list[dict[str, Any]]:
    return [msgpack.unpackb(d, raw=False) for d in s.drain()]


def frame(raw: dict[str, Any]) -> object:
    return parse_client_frame(raw)


def test_hello_then_welcome_opens_and_queues_the_welcome() -> None:
    """An accepted hello moves AWAIT_HELLO -> RESUMING -> OPEN and queues one welcome."""
    s = Session(max_frame=1234)
    assert s.state is SessionState.AWAIT_HELLO
    s.hello(hello(rid="h"), as_json=False, auth=OPEN_AUTH)
    assert s.state is SessionState.RESUMING
    assert not s.welcome(7, auth_open=True)
    assert s.state is SessionState.OPEN and s.cursor == 7
    [welcome] = sent(s)
    assert welcome["type"] == "welcome" and welcome["rid"] == "h" and welcome["seq"] == 7
    assert welcome["max_frame"] == 1234 and welcome["role"] == "writer"


def test_hello_with_a_wrong_token_is_unauthorized_and_a_reader_cannot_write() -> None:
    """Auth is decided in the session: wrong token -> unauthorized; reader -> forbidden events."""
    with pytest.raises(ProtocolError) as refused:
        Session().hello(hello(token="nope"), as_json=False, auth=TOKENS)
    assert refused.value.code is ErrorCode.UNAUTHORIZED
    s = opened(auth=TOKENS, token="r")
    assert s.role is Role.READER
    action = s.receive(
        frame({"type": "event", "event_id": "x", "kind": "tick", "day": 1}), as_json=False, size=9
    )
    assert isinstance(action, Reply) and action.frame["code"] == "forbidden"
    assert action.frame["event_id"] == "x"


def test_actions_are_typed() -> None:
    """An event becomes Submit (with its size), a query Query, (un)subscribe a Reply."""
    s = opened()
    event = s.receive(
        frame({"type": "event", "event_id": "e", "kind": "tick", "day": 1, "rid": 3}),
        as_json=True,
        size=42,
    )
    assert isinstance(event, Submit) and (event.event_id, event.rid, event.size) == ("e", 3, 42)
    assert event.json
    query = s.receive(frame({"type": "beliefs", "resident": "mira"}), as_json=False, size=1)
    assert isinstance(query, Query)
    sub = s.receive(frame({"type": "subscribe", "residents": "*", "rid": 1}), as_json=False, size=1)
    assert isinstance(sub, Reply) and sub.frame == {"type": "subscribed", "rid": 1, "seq": 0}


def test_illegal_transitions_raise_naming_the_state() -> None:
    """Frames before hello, a second hello, or anything after close are our own misuse."""
    s = Session()
    with pytest.raises(SessionStateError, match="await_hello"):
        s.receive(frame({"type": "beliefs", "resident": "m"}), as_json=False, size=1)
    s = opened()
    with pytest.raises(SessionStateError, match="open"):
        s.hello(hello(), as_json=False, auth=OPEN_AUTH)
    s.closed()
    with pytest.raises(SessionStateError, match="closed"):
        s.receive(frame({"type": "beliefs", "resident": "m"}), as_json=False, size=1)
    assert TRANSITIONS[SessionState.CLOSED] == frozenset()


def test_subscriptions_filter_and_unsubscribe_excludes_from_star() -> None:
    """Filters match by set lookup; unsubscribing a resident excludes it from a '*' filter."""
    s = opened(subscribe=["mira"])
    sent(s)
    s.deliver([change(1), change(2, resident="kai")])
    assert [f["resident"] for f in sent(s)] == ["mira"]
    s.receive(frame({"type": "subscribe", "residents": "*"}), as_json=False, size=1)
    s.receive(frame({"type": "unsubscribe", "residents": ["kai"]}), as_json=False, size=1)
    s.deliver([change(3, resident="kai"), change(4, resident="bo")])
    assert [f["resident"] for f in sent(s)] == ["bo"]
    assert s.cursor == 4


def test_subscription_bounds_refuse_with_limit_exceeded_and_change_nothing() -> None:
    """Too many filters, too many listed residents, too many roots: limit_exceeded."""
    s = Session(limits=Limits(max_subscriptions=2, max_residents=3, max_roots=2))
    s.hello(hello(), as_json=False, auth=OPEN_AUTH)
    s.welcome(0, auth_open=True)

    def sub(**f: Any) -> Reply:
        action = s.receive(frame({"type": "subscribe", **f}), as_json=False, size=1)
        assert isinstance(action, Reply)
        return action

    assert sub(residents=["a", "b"]).frame["type"] == "subscribed"
    too_many = sub(residents=["c", "d"], rid=9).frame
    assert (too_many["code"], too_many["rid"]) == ("limit_exceeded", 9)
    assert sub(residents="*", roots=["a", "b", "c"]).frame["code"] == "limit_exceeded"
    assert sub(residents="*", roots=["a"]).frame["type"] == "subscribed"
    assert sub(residents="*").frame["code"] == "limit_exceeded"
    assert len(s.subscriptions) == 2
    s.receive(frame({"type": "unsubscribe"}), as_json=False, size=1)
    assert sub(residents="*").frame["type"] == "subscribed"


def test_resume_catches_up_then_announces_and_holds_live_changes_back() -> None:
    """RESUMING: live changes are held back (seq remembered), the backlog is caught up, then
    'resumed' and live delivery."""
    s = Session()
    s.hello(hello(resume=1, subscribe="*"), as_json=False, auth=OPEN_AUTH)
    s.deliver([change(4)])  # published while the handshake read the latest seq
    assert s.welcome(3, auth_open=True)
    assert s.backfilling and s.cursor == 1
    frames = [s.catch_up(change(n)) for n in (2, 3, 4)]
    assert not s.behind
    assert [f["seq"] for f in frames if f] == [2, 3, 4]
    s.caught_up(3)
    assert s.state is SessionState.OPEN
    assert sent(s)[-1] == {"type": "resumed", "seq": 4, "sent": 3}
    s.deliver([change(4), change(5)])
    assert [f["seq"] for f in sent(s)] == [5]


def test_a_backlog_is_prefiltered_by_the_named_residents_and_passed_over_up_to_a_seq() -> None:
    """What a backlog read from the store may leave out: the residents the filters name (all
    of them, across filters), none once a filter is ``"*"``; :meth:`passed` moves the cursor
    over what was left out, never back, and ``resumed`` says where it got to."""
    s = Session()
    s.hello(hello(resume=0, subscribe=["mira"]), as_json=False, auth=OPEN_AUTH)
    assert s.welcome(9, auth_open=True)
    assert s.prefilter() == {"mira"}
    s.receive(frame({"type": "subscribe", "residents": ["bo", "kai"], "roots": ["x"]}),
              as_json=False, size=1)  # fmt: skip
    assert s.prefilter() == {"mira", "bo", "kai"}
    assert s.catch_up(change(4)) is not None
    s.passed(9)
    s.passed(6)
    assert s.cursor == 9 and not s.behind
    s.caught_up(1)
    assert sent(s)[-1] == {"type": "resumed", "seq": 9, "sent": 1}
    s.receive(frame({"type": "subscribe", "residents": "*"}), as_json=False, size=1)
    assert s.prefilter() is None
    assert Session().prefilter() is None  # (no filter yet: no backlog is read for it)


def test_changes_committed_during_the_handshake_are_caught_up_without_resumed() -> None:
    """No resume, but a change published during the handshake: catch up, no 'resumed'."""
    s = Session()
    s.hello(hello(subscribe="*"), as_json=False, auth=OPEN_AUTH)
    s.deliver([change(6)])
    assert s.welcome(5, auth_open=True)
    assert s.behind
    s.catch_up(change(6))
    s.caught_up(1)
    assert [f["type"] for f in sent(s)] == ["welcome"]


def test_outbox_overflow_turns_slow_consumer_and_room_has_hysteresis() -> None:
    """Past half the bound there is no room until a quarter; past the bound: slow consumer."""
    s = Session(outbox_limit=1000)
    s.hello(hello(), as_json=False, auth=OPEN_AUTH)
    s.welcome(0, auth_open=True)
    sent(s)
    big = {"type": "x", "pad": "p" * 280}
    assert s.push(big) and s.room
    assert s.push(big) and not s.room  # > 500
    s.pop()
    assert not s.room  # ~290 > 250
    s.pop()
    assert s.room and s.outbox_bytes == 0
    for _ in range(3):
        assert s.push(big)
    assert not s.push(big)
    assert s.slow and s.state is SessionState.CLOSING and s.outbox_bytes == 0
    assert not s.push(big)  # nothing more is queued
    last = msgpack.unpackb(s.fatal(s.slow_error()), raw=False)
    assert last["code"] == "slow_consumer"


def test_one_commit_too_big_for_a_peer_that_kept_up_is_caught_up_not_dropped() -> None:
    """An outbox at most half full when a commit's notifications come: those that do not
    fit are not discarded and the peer is not slow; the session turns RESUMING with its
    cursor on the last one queued, and catching up from the store gives the rest once, in
    seq order, then live delivery again (no ``resumed``: the peer asked for no resume)."""
    s = Session(outbox_limit=64 * 1024)
    s.hello(hello(subscribe="*"), as_json=False, auth=OPEN_AUTH)
    s.welcome(0, auth_open=True)
    sent(s)
    burst = [change(n, resident=f"r{n}", subject_after="s" * 200) for n in range(1, 601)]
    s.deliver(burst)
    assert not s.slow and s.backfilling and s.behind
    queued = [f["seq"] for f in sent(s)]
    assert queued == list(range(1, len(queued) + 1)) and 0 < len(queued) < 600
    assert s.cursor == queued[-1] and s.missed == 600
    # an ack of a change still in the backlog waits for it (SPEC §14.2); one already sent not
    assert s.holds_ack(600) and not s.holds_ack(queued[-1]) and not s.holds_ack(None)
    s.deliver([change(601)])  # live, while catching up: held back, only its seq remembered
    assert sent(s) == [] and s.missed == 601
    rest = [s.catch_up(c) for c in [*burst[s.cursor :], change(601)]]
    assert [f["seq"] for f in rest if f] == list(range(len(queued) + 1, 602))
    assert not s.behind
    s.caught_up(len(rest))
    assert not s.holds_ack(600) and not s.overflowed
    assert s.state is SessionState.OPEN and sent(s) == []
    s.deliver([change(601), change(602)])
    assert [f["seq"] for f in sent(s)] == [602]


def test_one_commit_too_big_for_a_peer_behind_is_a_slow_consumer() -> None:
    """A peer that let more than half the bound wait did not keep up: past the bound it is a
    slow consumer, as before (nothing is caught up)."""
    s = Session(outbox_limit=64 * 1024)
    s.hello(hello(subscribe="*"), as_json=False, auth=OPEN_AUTH)
    s.welcome(0, auth_open=True)
    n = 0
    while s.room:  # fill past half, never read
        n += 1
        s.deliver([change(n, subject_after="s" * 200)])
    s.deliver([change(m, subject_after="s" * 200) for m in range(n + 1, n + 400)])
    assert s.slow and s.state is SessionState.CLOSING and not s.backfilling


def test_a_resumed_peer_is_told_resumed_once_not_after_an_overflow() -> None:
    """The hello's resume is answered ``resumed`` when its backlog is caught up; a later
    overflow catches up the same way, silently."""
    s = Session(outbox_limit=64 * 1024)
    s.hello(hello(resume=0, subscribe="*"), as_json=False, auth=OPEN_AUTH)
    assert s.welcome(1, auth_open=True)
    assert not s.holds_ack(1)  # a resume's backlog holds no ack back (SPEC §14.2)
    backlog = s.catch_up(change(1))
    assert backlog is not None and s.push(backlog)  # (the connection queues what it returns)
    s.caught_up(1)
    assert [f["type"] for f in sent(s)] == ["welcome", "belief", "resumed"]
    s.deliver([change(n, subject_after="s" * 200) for n in range(2, 602)])
    assert s.backfilling
    queued = len(sent(s))
    for n in range(2 + queued, 602):
        caught = s.catch_up(change(n, subject_after="s" * 200))
        assert caught is not None and s.push(caught)
        sent(s)  # (the peer reads as it goes)
    s.caught_up(600 - queued)
    assert s.state is SessionState.OPEN
    assert sent(s) == []  # no second 'resumed'
    assert s.resumed_sent


def test_json_hello_makes_json_notifications_and_replies_follow_the_request() -> None:
    """Notifications use the hello's encoding; a reply uses its request's."""
    s = Session()
    s.hello(hello(subscribe="*"), as_json=True, auth=OPEN_AUTH)
    s.welcome(0, auth_open=True)
    s.deliver([change(1)])
    s.push({"type": "subscribed", "rid": None, "seq": 1}, json=False)
    welcome, note, reply = list(s.drain())
    assert isinstance(welcome, str) and isinstance(note, str) and isinstance(reply, bytes)
    assert "rid" not in msgpack.unpackb(reply, raw=False)  # a nil rid is left out
