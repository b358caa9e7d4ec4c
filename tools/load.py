"""``credence load``: simulated game clients driving a synthetic town against a sidecar.

N client connections send the events of a :class:`~tools.town.Town` (client ``i`` sends
events ``i, i+N, …``), each with up to ``window`` events awaiting their ack, optionally paced
to a total rate. One more connection, subscribed to ``"*"``, receives the ``belief``
notifications. Replies on a connection come in request order, so the k-th reply answers the
k-th event sent on it: that gives the ack latency without matching ids. A notification names
its ``event_id``, which gives the event → notification latency.

Without ``--url`` the tool starts its own sidecar (``python -m sidecar.cli serve``) as a
child process on a temporary database and samples its peak memory (``VmHWM`` in
``/proc/<pid>/status``); against a ``--url`` the memory is reported as ``n/a``.

The events go out in rounds (:class:`ClockedSource`): every event of a round carries one day,
after the target world's clock (read from a ``worlds`` reply first), and a round starts when
the one before is answered. So a sidecar with the default rules, which refuses any event dated
before its world's clock, refuses none, and the figures hold against any sidecar; the tool's
own sidecar runs with those default rules too.

Everything is bounded: the number of events (``--events``) or the sending time
(``--duration``, with a hard cap of events too), and every wait by ``--timeout``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import msgpack
import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from .harness import ServerProcess, percentiles, read_memory
from .town import DAY_STEP, TICK_DAYS, Dealer, Town, encode_event

__all__ = [
    "ClockedSource",
    "DriveResult",
    "FrameSource",
    "ListSource",
    "LoadConfig",
    "TownSource",
    "drive",
    "render",
    "run_load",
    "world_clock",
]

#: Events per run when neither --events nor a rate bounds a --duration run.
DURATION_EVENT_CAP = 5_000_000

#: A round of ``credence load`` (see :class:`ClockedSource`) is this many full windows of
#: every client: long enough that the drain between rounds costs little throughput.
ROUND_WINDOWS = 2


class FrameSource(Protocol):
    """Where each client's next event frame comes from: ``(event_id, msgpack bytes)``.

    ``turn`` comes before each ``take``: None, or something to await first (a
    :class:`ClockedSource` holds a client back until the previous round is answered). ``answered`` is called once
    per reply (ack or error) and once per event left unanswered when a connection closes.
    """

    def turn(self, client: int) -> Awaitable[None] | None: ...

    def take(self, client: int) -> tuple[str, bytes] | None: ...

    def answered(self) -> None: ...


class _Unpaced:
    """No rounds: every client sends as fast as its window allows."""

    def turn(self, client: int) -> Awaitable[None] | None:
        return None

    def answered(self) -> None:
        return None


class TownSource(_Unpaced):
    """Town events, generated lazily and dealt to clients deterministically (its days as the
    town made them: concurrent clients need a world with ``late_event_days``)."""

    def __init__(self, town: Town, limit: int | None) -> None:
        self.dealer = Dealer(town, limit)

    def take(self, client: int) -> tuple[str, bytes] | None:
        event = self.dealer.take(client)
        return None if event is None else (event["event_id"], encode_event(event))


class ListSource(_Unpaced):
    """Pre-encoded frames, one list per client (the bench sends the same ones to each server)."""

    def __init__(self, frames: list[list[tuple[str, bytes]]]) -> None:
        self.frames = frames
        self.next = [0] * len(frames)

    def take(self, client: int) -> tuple[str, bytes] | None:
        i = self.next[client]
        if i >= len(self.frames[client]):
            return None
        self.next[client] = i + 1
        return self.frames[client][i]


class ClockedSource:
    """Town events in rounds that no world clock can refuse, whatever the world's rules.

    A world with the default rules (``late_event_days`` 0) refuses an event dated before its
    clock, and events of different connections are committed in no fixed order. So the
    town's events go out in rounds of ``round_events``: every event of a round is dated the
    same day — ``base_day`` plus the town's day of the round's last event, so days never go
    down and hearsay ages as the town's clock says — and a round starts only when every
    event of the one before is answered. The clock is then at most that day when any event
    of the round is committed. ``base_day`` is the target world's clock (see
    :func:`world_clock`). ``until_day`` stops before the first round whose town day is later
    (that round is kept: raise ``until_day`` and drive again to go on).
    """

    def __init__(
        self,
        town: Town,
        limit: int | None,
        *,
        round_events: int,
        base_day: float = 0.0,
        until_day: float | None = None,
    ) -> None:
        if round_events < 1:
            raise ValueError("a round has at least one event")
        self.town = town
        self.limit = limit
        self.round_events = round_events
        self.base_day = base_day
        self.until_day = until_day
        self.queues: list[deque[tuple[str, bytes]]] = [deque() for _ in range(town.clients)]
        self.generated = 0
        self.released = 0
        self.replies = 0
        self.day = base_day  # the day of the latest round released
        self._held: tuple[float, list[tuple[int, dict[str, Any]]]] | None = None
        self._changed: asyncio.Event | None = None

    @property
    def town_day(self) -> float:
        """The town's day of the latest round released (without ``base_day``)."""
        return self.day - self.base_day

    def _next_round(self) -> tuple[float, list[tuple[int, dict[str, Any]]]] | None:
        if self._held is not None:
            return self._held
        count = self.round_events
        if self.limit is not None:
            count = min(count, self.limit - self.generated)
        if count <= 0:
            return None
        events = [next(self.town) for _ in range(count)]
        self.generated += count
        self._held = (events[-1][1]["day"], events)
        return self._held

    def _release(self) -> bool:
        got = self._next_round()
        if got is None:
            return False
        town_day, events = got
        if self.until_day is not None and town_day > self.until_day:
            return False
        self._held = None
        self.day = round(self.base_day + town_day, 6)
        for client, event in events:
            self.queues[client].append(
                (event["event_id"], encode_event({**event, "day": self.day}))
            )
        self.released += len(events)
        return True

    def turn(self, client: int) -> Awaitable[None] | None:
        """None when this client has an event of an open round; else the wait for one (or
        for the end of the source)."""
        return None if self.queues[client] else self._wait(client)

    async def _wait(self, client: int) -> None:
        while not self.queues[client]:
            if self.replies >= self.released:
                if not self._release():
                    return
                continue
            if self._changed is None:
                self._changed = asyncio.Event()
            await self._changed.wait()

    def take(self, client: int) -> tuple[str, bytes] | None:
        queue = self.queues[client]
        return queue.popleft() if queue else None

    def answered(self) -> None:
        self.replies += 1
        if self.replies >= self.released and self._changed is not None:
            self._changed.set()
            self._changed = None


@dataclass(slots=True)
class DriveResult:
    """What a run measured. Times are ``time.perf_counter`` seconds; latencies in seconds."""

    clients: int
    start: float = 0.0
    last_send: float = 0.0
    last_reply: float = 0.0
    last_notification: float = 0.0
    sent: int = 0
    acked: int = 0
    duplicates: int = 0
    changes: int = 0
    max_seq: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    ack_latency: list[float] = field(default_factory=list)
    notifications: int = 0
    notify_latency: list[float] = field(default_factory=list)
    notified_seq: int = 0
    acked_ids: list[str] = field(default_factory=list)

    def rate(self, count: int, until: float) -> float:
        span = until - self.start
        return count / span if span > 0 and count else 0.0

    @property
    def sent_per_s(self) -> float:
        return self.rate(self.sent, self.last_send)

    @property
    def acked_per_s(self) -> float:
        return self.rate(self.acked, self.last_reply)

    @property
    def notifications_per_s(self) -> float:
        return self.rate(self.notifications, self.last_notification)

    @property
    def duration(self) -> float:
        return max(self.last_reply, self.last_send, self.last_notification) - self.start


async def open_client(
    url: str,
    world: str,
    token: str | None,
    *,
    subscribe: str | None = None,
    client: str = "credence-load",
) -> ClientConnection:
    """Connect and complete the handshake; raise ``RuntimeError`` if the server refuses."""
    ws = await asyncio.wait_for(
        connect(url, proxy=None, compression=None, ping_interval=None, max_size=8 * 1024 * 1024,
                close_timeout=5, open_timeout=10),
        15,
    )  # fmt: skip
    hello: dict[str, Any] = {"type": "hello", "protocol": 1, "world": world, "client": client}
    if token:
        hello["token"] = token
    if subscribe is not None:
        hello["subscribe"] = subscribe
    await ws.send(msgpack.packb(hello))
    reply = msgpack.unpackb(await asyncio.wait_for(ws.recv(), 15), raw=False)
    if reply.get("type") != "welcome":
        await ws.close()
        raise RuntimeError(f"hello refused: {reply.get('code')}: {reply.get('message')}")
    return ws


async def world_clock(url: str, world: str, token: str | None) -> tuple[float, int]:
    """``(day, events)`` of ``world`` at ``url`` from a ``worlds`` reply; ``(0.0, 0)`` for a
    world that does not exist yet. The welcome carries no clock, so this asks."""
    ws = await open_client(url, world, token, client="credence-load-clock")
    try:
        await ws.send(msgpack.packb({"type": "worlds", "rid": "clock"}))
        listed: list[dict[str, Any]] = []
        while True:
            frame = msgpack.unpackb(await asyncio.wait_for(ws.recv(), 30), raw=False)
            if frame.get("type") == "error":
                raise RuntimeError(f"worlds refused: {frame.get('code')}: {frame.get('message')}")
            if frame.get("type") != "worlds" or frame.get("rid") != "clock":
                continue
            listed += frame.get("worlds") or []
            if not frame.get("more"):
                break
    finally:
        await ws.close()
    for entry in listed:
        if entry.get("world") == world:
            return float(entry.get("day") or 0.0), int(entry.get("events") or 0)
    return 0.0, 0


async def _client(
    i: int,
    ws: ClientConnection,
    source: FrameSource,
    result: DriveResult,
    *,
    window: int,
    rate: float | None,
    stop_at: float | None,
    sent_at: dict[str, float] | None,
    keep_ids: bool,
) -> None:
    pending: deque[tuple[float, str]] = deque()
    slots = asyncio.Semaphore(window)
    closed = asyncio.Event()
    state = {"done": False}

    async def receive() -> None:
        try:
            async for message in ws:
                now = time.perf_counter()
                frame = msgpack.unpackb(message, raw=False)
                if not pending:
                    result.errors[f"unexpected {frame.get('type')} frame"] += 1
                    continue
                t0, event_id = pending.popleft()
                slots.release()
                source.answered()
                result.last_reply = now
                kind = frame.get("type")
                if kind == "ack":
                    result.acked += 1
                    result.ack_latency.append(now - t0)
                    result.changes += frame.get("changes", 0)
                    result.duplicates += bool(frame.get("duplicate"))
                    result.max_seq = max(result.max_seq, frame.get("seq") or 0)
                    if keep_ids:
                        result.acked_ids.append(event_id)
                elif kind == "error":
                    result.errors[str(frame.get("code"))] += 1
                else:
                    result.errors[f"unexpected {kind} frame"] += 1
                if state["done"] and not pending:
                    return
        except ConnectionClosed:
            pass
        code = ws.close_code
        if not (state["done"] and not pending):
            result.errors[f"closed {code} with {len(pending)} unanswered"] += 1
        for _ in range(len(pending)):  # never answered: do not hold the next round back
            source.answered()
        pending.clear()
        closed.set()
        for _ in range(window + 1):  # wake the sender if it waits for a slot
            slots.release()

    receiver = asyncio.get_running_loop().create_task(receive())
    closing = asyncio.ensure_future(closed.wait())
    per_client = rate / result.clients if rate else None
    offset = i / rate if rate else 0.0
    n = 0
    try:
        while not closed.is_set():
            now = time.perf_counter()
            if stop_at is not None and now >= stop_at:
                break
            turn = source.turn(i)
            if turn is not None:
                waiting = asyncio.ensure_future(turn)
                await asyncio.wait(
                    [waiting, closing],
                    timeout=None if stop_at is None else stop_at - now,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if not waiting.done():
                    waiting.cancel()
                    break
            item = source.take(i)
            if item is None:
                break
            if per_client:
                due = result.start + offset + n / per_client
                if due > now:
                    await asyncio.sleep(due - now)
            await slots.acquire()
            if closed.is_set():
                break
            event_id, data = item
            now = time.perf_counter()
            pending.append((now, event_id))
            if sent_at is not None:
                sent_at[event_id] = now
            try:
                await ws.send(data)
            except ConnectionClosed:
                break
            n += 1
            result.sent += 1
            result.last_send = now
        state["done"] = True
        if not pending and not receiver.done():
            receiver.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await receiver
    finally:
        receiver.cancel()
        closing.cancel()
        with contextlib.suppress(BaseException):
            await ws.close()


async def _observer(
    ws: ClientConnection, result: DriveResult, sent_at: dict[str, float], progress: asyncio.Event
) -> None:
    try:
        async for message in ws:
            now = time.perf_counter()
            frame = msgpack.unpackb(message, raw=False)
            if frame.get("type") != "belief":
                continue
            result.notifications += 1
            result.last_notification = now
            result.notified_seq = max(result.notified_seq, frame.get("seq") or 0)
            t0 = sent_at.get(frame.get("event_id", ""))
            if t0 is not None:
                result.notify_latency.append(now - t0)
            progress.set()
    except ConnectionClosed:
        pass
    if ws.close_code not in (None, 1000):
        result.errors[f"observer closed {ws.close_code}"] += 1


async def drive(
    url: str,
    source: FrameSource,
    *,
    clients: int,
    world: str = "load",
    token: str | None = None,
    window: int = 64,
    rate: float | None = None,
    duration: float | None = None,
    observe: bool = True,
    timeout: float = 600.0,
    keep_ids: bool = False,
    on_tick: Callable[[DriveResult], None] | None = None,
) -> DriveResult:
    """Send every frame of ``source`` over ``clients`` connections; collect the figures.

    Stops sending at ``duration`` seconds (if given) or when the source is exhausted, then
    waits for every reply and (with ``observe``) for the notifications up to the last acked
    seq — all within ``timeout`` seconds. A timeout is recorded as an error, not raised.
    """
    result = DriveResult(clients=clients)
    sent_at: dict[str, float] | None = {} if observe else None
    observer = (
        await open_client(url, world, token, subscribe="*", client="credence-load-observer")
        if observe
        else None
    )
    conns = [await open_client(url, world, token) for _ in range(clients)]
    result.start = time.perf_counter()
    stop_at = result.start + duration if duration is not None else None
    noted = asyncio.Event()
    watch: asyncio.Task[None] | None = None
    if observer is not None:
        assert sent_at is not None
        watch = asyncio.get_running_loop().create_task(_observer(observer, result, sent_at, noted))
    ticker = asyncio.get_running_loop().create_task(_tick(result, on_tick)) if on_tick else None
    deadline = result.start + timeout
    tasks = [
        asyncio.get_running_loop().create_task(
            _client(i, ws, source, result, window=window, rate=rate, stop_at=stop_at,
                    sent_at=sent_at, keep_ids=keep_ids)
        )
        for i, ws in enumerate(conns)
    ]  # fmt: skip
    try:
        done, running = await asyncio.wait(tasks, timeout=max(0.0, deadline - time.perf_counter()))
        if running:
            result.errors["timeout waiting for acks"] += 1
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
        for task in done:
            if task.exception() is not None:
                result.errors[f"client failed: {task.exception()!r}"] += 1
        if watch is not None and observer is not None:
            while result.notified_seq < result.max_seq and not watch.done():
                left = deadline - time.perf_counter()
                if left <= 0:
                    result.errors["timeout waiting for notifications"] += 1
                    break
                noted.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(noted.wait(), min(left, 1.0))
            await observer.close()
            await watch
    finally:
        if ticker is not None:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
        for ws in conns:
            with contextlib.suppress(Exception):
                await ws.close()
    if on_tick is not None:
        on_tick(result)
    return result


async def _tick(result: DriveResult, on_tick: Callable[[DriveResult], None]) -> None:
    while True:
        await asyncio.sleep(0.2)
        on_tick(result)


# --------------------------------------------------------------------------- the command


@dataclass(slots=True)
class LoadConfig:
    url: str | None = None
    token: str | None = None
    world: str = "load"
    clients: int = 4
    residents: int = 50
    events: int | None = 2000
    duration: float | None = None
    rate: float | None = None
    seed: int = 1
    window: int = 64
    timeout: float | None = None
    #: Game days between consecutive town events (:class:`~tools.town.Town`'s ``day_step``;
    #: its ticks move the clock in proportion). The default packs a year into ~18,000 events,
    #: so hearsay ages in a short run; a game's clock moves far slower per event, and with it
    #: what each tick and round ages at once.
    day_step: float = DAY_STEP


class _Progress:
    """A one-line progress display on stderr (``\\r``), only when stderr is a terminal."""

    def __init__(self, total: int | None, duration: float | None) -> None:
        self.total, self.duration = total, duration
        self.enabled = sys.stderr.isatty()
        self.t0 = time.perf_counter()

    def __call__(self, r: DriveResult) -> None:
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.t0
        frac = (
            (r.sent / self.total)
            if self.total
            else (elapsed / self.duration if self.duration else 0)
        )
        frac = max(0.0, min(1.0, frac))
        bar = "#" * int(frac * 24)
        line = (
            f"\r[{bar:<24}] {elapsed:6.1f}s sent {r.sent} acked {r.acked} "
            f"notes {r.notifications} errors {sum(r.errors.values())}"
        )
        sys.stderr.write(line[:100].ljust(100))
        sys.stderr.flush()

    def end(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _ms(samples: list[float]) -> dict[str, float]:
    return {k: round(v * 1000, 3) for k, v in percentiles(samples).items()}


def report(
    config: LoadConfig, r: DriveResult, memory: tuple[float, float] | None
) -> dict[str, Any]:
    """The figures of a run as a JSON-ready mapping (what ``--json`` prints)."""
    return {
        "config": {
            "url": config.url, "world": config.world, "clients": config.clients,
            "residents": config.residents, "events": config.events, "duration": config.duration,
            "rate": config.rate, "seed": config.seed, "window": config.window,
            "day_step": config.day_step,
        },
        "duration_s": round(r.duration, 3),
        "events_sent": r.sent,
        "events_acked": r.acked,
        "duplicates": r.duplicates,
        "sent_per_s": round(r.sent_per_s, 1),
        "acked_per_s": round(r.acked_per_s, 1),
        "changes_acked": r.changes,
        "notifications": r.notifications,
        "notifications_per_s": round(r.notifications_per_s, 1),
        "ack_latency_ms": _ms(r.ack_latency),
        "notify_latency_ms": _ms(r.notify_latency),
        "errors": dict(sorted(r.errors.items())),
        "sidecar_peak_rss_mib": "n/a" if memory is None else round(memory[0], 1),
        "sidecar_rss_mib": "n/a" if memory is None else round(memory[1], 1),
    }  # fmt: skip


def render(fig: dict[str, Any]) -> str:
    """The human-readable table of :func:`report`'s figures."""
    c = fig["config"]
    target = "own sidecar (temporary database)" if c["url"] is None else c["url"]
    bound = f"{c['events']} events" if c["duration"] is None else f"{c['duration']} s"
    rate = "unlimited" if c["rate"] is None else f"{c['rate']:g}/s"
    lines = [
        f"credence load: {c['clients']} clients, {c['residents']} residents, {bound}, "
        f"rate {rate}, seed {c['seed']}, window {c['window']}, {c['day_step']:g} game days "
        f"an event — {target}",
        "",
        f"  {'duration':<24}{fig['duration_s']:>12.2f} s",
        f"  {'events sent':<24}{fig['events_sent']:>12}   {fig['sent_per_s']:>10.1f} /s",
        f"  {'events acknowledged':<24}{fig['events_acked']:>12}   {fig['acked_per_s']:>10.1f} /s"
        + (f"   ({fig['duplicates']} duplicates)" if fig["duplicates"] else ""),
        f"  {'notifications':<24}{fig['notifications']:>12}   "
        f"{fig['notifications_per_s']:>10.1f} /s   ({fig['changes_acked']} changes acked)",
        "",
        f"  {'latency (ms)':<24}{'p50':>10}{'p95':>10}{'p99':>10}{'max':>10}",
    ]
    for label, key in (("ack", "ack_latency_ms"), ("event → notification", "notify_latency_ms")):
        p = fig[key]
        lines.append(
            f"  {label:<24}{p['p50']:>10.2f}{p['p95']:>10.2f}{p['p99']:>10.2f}{p['max']:>10.2f}"
        )
    lines.append("")
    errors = fig["errors"]
    lines.append(f"  {'errors':<24}{'none' if not errors else ''}")
    for code, n in errors.items():
        lines.append(f"    {code:<38}{n:>8}")
    peak, now = fig["sidecar_peak_rss_mib"], fig["sidecar_rss_mib"]
    mem = (
        "n/a (sidecar at --url)"
        if peak == "n/a"
        else f"{peak:.1f} MiB peak (VmHWM), {now:.1f} MiB at end"
    )
    lines.append(f"  {'sidecar memory':<24}{mem}")
    return "\n".join(lines)


async def _sample_memory(pid: int, peak: list[float]) -> None:
    while True:
        got = read_memory(pid)
        if got is not None:
            peak[0], peak[1] = max(peak[0], got[0]), got[1]
        await asyncio.sleep(0.1)


async def run_load(config: LoadConfig) -> dict[str, Any]:
    """Run the load (starting a sidecar unless ``config.url``) and return :func:`report`."""
    limit = config.events if config.duration is None else None
    if config.duration is not None:
        limit = (
            DURATION_EVENT_CAP if config.rate is None else math.ceil(config.rate * config.duration)
        )
    timeout = config.timeout or ((config.duration or 0) + 600.0)
    progress = _Progress(limit if config.duration is None else None, config.duration)
    with contextlib.ExitStack() as stack:
        url = config.url
        server: ServerProcess | None = None
        if url is None:  # the default rules: late events refused, as at any sidecar
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="credence-load-")))
            tokens = [config.token] if config.token else []
            server = stack.enter_context(ServerProcess(tmp / "load.db", tokens=tokens))
            url = server.url
        base_day, logged = await world_clock(url, config.world, config.token)
        # A world that already has events gets new ids (a rerun is not all duplicates) and
        # the town's days after its clock.
        prefix = f"s{config.seed}-" if not logged else f"s{config.seed}-{logged}-"
        town = Town(
            config.residents, seed=config.seed, clients=config.clients, id_prefix=prefix,
            day_step=config.day_step, tick_days=TICK_DAYS * config.day_step / DAY_STEP,
        )  # fmt: skip
        source = ClockedSource(
            town, limit, round_events=config.clients * config.window * ROUND_WINDOWS,
            base_day=base_day,
        )  # fmt: skip
        peak = [0.0, 0.0]
        sampler = None
        if server is not None:
            sampler = asyncio.get_running_loop().create_task(_sample_memory(server.pid, peak))
        try:
            result = await drive(
                url, source, clients=config.clients, world=config.world, token=config.token,
                window=config.window, rate=config.rate, duration=config.duration,
                timeout=timeout, on_tick=progress,
            )  # fmt: skip
        finally:
            progress.end()
            if sampler is not None:
                sampler.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sampler
        memory = None
        if server is not None:
            got = server.memory()
            if got is not None:
                peak[0], peak[1] = max(peak[0], got[0]), got[1]
            memory = (peak[0], peak[1])
    return report(config, result, memory)


#: The ack p99 a game can live with: one frame at 60 fps up to this rate (issue 20).
FRAME_MS, FRAME_RATE = 16.0, 400.0


async def run_curve(config: LoadConfig, rates: Sequence[float]) -> dict[str, Any]:
    """:func:`run_load` once per rate, each for ``config.duration`` seconds on a sidecar of
    its own (or into ``config.url``, one after the other), and the rate → latency curve."""
    rows = []
    for rate in rates:
        fig = await run_load(dataclasses.replace(config, rate=rate))
        rows.append({
            "rate": rate, "acked_per_s": fig["acked_per_s"], "ack_latency_ms": fig["ack_latency_ms"],
            "notify_latency_ms": fig["notify_latency_ms"], "errors": fig["errors"],
            "sidecar_peak_rss_mib": fig["sidecar_peak_rss_mib"],
        })  # fmt: skip
    return {
        "config": {"url": config.url, "clients": config.clients, "residents": config.residents,
                   "duration": config.duration, "seed": config.seed, "window": config.window,
                   "day_step": config.day_step},
        "target": {"ack_p99_ms": FRAME_MS, "up_to_rate": FRAME_RATE},
        "curve": rows,
    }  # fmt: skip


def render_curve(fig: dict[str, Any]) -> str:
    """The curve as a table a README can carry, with the frame target marked per row."""
    c = fig["config"]
    target = "own sidecar per rate" if c["url"] is None else c["url"]
    lines = [
        f"credence load --curve: {c['clients']} clients, {c['residents']} residents, "
        f"{c['duration']:g} s per rate, seed {c['seed']}, {c['day_step']:g} game days an "
        f"event — {target}",
        "",
        f"  {'rate /s':>8}{'acked /s':>10}{'ack p50':>10}{'ack p99':>10}{'note p99':>10}"
        f"{'errors':>8}  target",
    ]
    for row in fig["curve"]:
        ack, note = row["ack_latency_ms"], row["notify_latency_ms"]
        if row["rate"] <= FRAME_RATE:
            met = "ok" if ack["p99"] <= FRAME_MS else "MISSED"
            goal = f"p99 ≤ {FRAME_MS:g} ms: {met}"
        else:
            goal = ""
        lines.append(
            f"  {row['rate']:>8g}{row['acked_per_s']:>10.1f}{ack['p50']:>10.2f}{ack['p99']:>10.2f}"
            f"{note['p99']:>10.2f}{sum(row['errors'].values()):>8}  {goal}"
        )
    return "\n".join(lines)


def main(config: LoadConfig, *, as_json: bool = False, curve: Sequence[float] | None = None) -> int:
    if curve:
        try:
            figures = asyncio.run(run_curve(config, curve))
        except (OSError, RuntimeError, TimeoutError) as exc:
            print(f"credence load: {exc}", file=sys.stderr)
            return 2
        text = orjson.dumps(figures, option=orjson.OPT_INDENT_2).decode()
        print(text if as_json else render_curve(figures))
        return 0 if all(row["acked_per_s"] for row in figures["curve"]) else 1
    try:
        figures = asyncio.run(run_load(config))
    except (OSError, RuntimeError, TimeoutError) as exc:
        print(f"credence load: {exc}", file=sys.stderr)
        return 2
    if as_json:
        print(orjson.dumps(figures, option=orjson.OPT_INDENT_2).decode())
    else:
        print(render(figures))
    return 0 if figures["events_acked"] else 1
