"""The writer service: group commit off the event loop, fair across worlds, bounded in bytes.

Connections submit events and get a future. The writer loop takes a batch, hands it to the
store's single :class:`~sidecar.store.Writer` in a dedicated thread (the event loop never
waits on SQLite), and once the batch is committed publishes the change records and resolves
the futures. Under load many events share one transaction, so throughput does not collapse
to one fsync per event.

Bounds and fairness (everything here is counted in the *bytes* of the frames that carried
the events, not in events):

* each world has its own FIFO sub-queue; a batch takes one event from each world in turn
  (round robin), up to ``max_batch`` events or ``max_batch_bytes``, so one world's huge
  events cannot starve another world's ``tick``: it is in the next batch;
* a world's sub-queue holds at most ``world_budget`` bytes and all of them together at most
  ``total_budget``; past that ``submit`` waits (the connection stops reading its socket:
  TCP backpressure), except that a world with nothing queued always gets one event in;
* on shutdown (:meth:`shut_down`), batches go on until a deadline; events that have not
  started by then are refused with ``shutting_down`` (not stored), so stopping takes a
  bounded time however long the queue.

Supervision: :meth:`run` never lets an exception escape. A :class:`~sidecar.store.
StorageFailure` refuses its batch (``internal_error``, nothing of it stored) and the loop
goes on; anything else means the writer's state can no longer be trusted, so it is
*failed*: one ERROR log line, every event in flight or queued is answered
``internal_error``, every later ``submit`` too, and :attr:`failure` is set (the health check
answers 503). ``close`` still works, so SIGTERM still stops the process.

A data directory (one file per world) may hold a world's events back
(``apply_or_hold``): its file is not open yet, or an older Credence left it, and it is being
opened on an opener thread or upgraded in a worker process. Those events go back to the head
of their world's queue and the world takes no turn until that is done (:attr:`not_ready`);
every other world goes on. There each world is its own transaction, and its events are
acked as it commits, not at the end of the batch.

Saves (a ``fork`` into a new world, :meth:`save`) run on the same thread, one step at a
time between batches; a step is short (about :data:`~sidecar.store.worlds.SAVE_STEP_SECONDS`):
the start of the save, a chunk of rows copied in, the switch. The replay itself, which holds
the GIL, runs in a worker process meanwhile (the build's ``elsewhere`` future: the loop waits
for it, or for work, without a step). A build without a worker (``begin_import``) replays a
chunk of events per step. So another world's ack waits at most about one step behind a save,
however long the save; the save's own reply comes once it is whole. While a
save builds a world, events for that world are refused with ``world_busy`` (nothing stored):
its rows are not whole yet, and the save must not overwrite or mix with them. Saves go one
at a time, in order; a shutdown refuses the saves not yet whole (``shutting_down``) and
removes what they built.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from protocol import ErrorCode

from ..engine import WorldEvent
from ..store import Build, EventResult, StorageFailure, WorldInfo, Writer

__all__ = [
    "SAVE_REST",
    "SHUTDOWN_MESSAGE",
    "NotStored",
    "Submission",
    "WriterService",
    "busy_message",
    "world_busy",
]

log = logging.getLogger("credence.writer")

Publish = Callable[[str, Sequence[EventResult]], None]

#: After a save step of ``d`` seconds the writer runs no other step for ``SAVE_REST * d``
#: (other worlds' batches still go at once). A step holds the GIL for most of its time, so
#: back to back steps starve the event loop: every read, ack and send waits for the GIL in
#: 5 ms turns (measured: another world's ack p50 6 -> 55 ms during a fork). Resting as
#: long as it worked halves the save's speed and gives the event loop the other half. It
#: rests only while other worlds write (a batch in the last ``_ACTIVE_SECONDS``): alone, a
#: save goes at full speed.
SAVE_REST = 1.0
_ACTIVE_SECONDS = 1.0


class NotStored(Exception):
    """An event the writer did not store, with the wire code its refusal carries."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(slots=True, kw_only=True)
class Submission:
    """One queued event: its world, the event, the size of the frame that carried it, and the
    future its connection awaits (an :class:`EventResult`, or :class:`NotStored`)."""

    world: str
    event: WorldEvent
    size: int
    future: asyncio.Future[EventResult]


@dataclass(slots=True)
class _Save:
    """One save queued or under way: its world, how to start it (on the writer thread), the
    build once started, and the future its requester awaits."""

    world: str
    begin: Callable[[], Build]
    future: asyncio.Future[WorldInfo]
    build: Build | None = None


def world_busy(world: str) -> NotStored:
    """The refusal of an event for a world a save is building (or a delete removing)."""
    return NotStored(ErrorCode.WORLD_BUSY, busy_message(world, "the event was not stored: "))


def busy_message(world: str, what: str = "") -> str:
    """Why ``world`` is busy, and when to ask again (for events and queries alike)."""
    return (
        f"world {world!r} is being built by a fork or an import, or removed by a delete; "
        f"{what}send it again after that save's reply, or a moment after the delete's"
    )


class WriterService:
    """Owns the store writer; ``submit`` queues an event, the future resolves after commit."""

    def __init__(
        self, writer: Writer, publish: Publish, *, max_batch: int = 2000,
        max_batch_bytes: int = 32 * 1024, world_budget: int = 8 * 1024 * 1024,
        total_budget: int = 32 * 1024 * 1024,
    ) -> None:  # fmt: skip
        self.writer = writer
        self.publish = publish
        self.max_batch = max_batch
        self.max_batch_bytes = max_batch_bytes
        self.world_budget = world_budget
        self.total_budget = total_budget
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="credence-writer")
        self._queues: dict[str, deque[Submission]] = {}
        self._turns: deque[str] = deque()  # worlds with queued events, in round-robin order
        self._world_bytes: dict[str, int] = {}
        self.queued_bytes = 0
        self.queued = 0
        self._inflight: list[Submission] = []
        self._saves: deque[_Save] = deque()
        #: The worlds being built by a save (queued or under way): their events are refused.
        self.saving: set[str] = set()
        #: Of those, the worlds a delete has removed whose rows are still being tidied away.
        self.removing: set[str] = set()
        #: Worlds whose file is being opened, or upgraded to this version's schema (the
        #: store's ``apply_or_hold``): their events stay queued, in order, until it is done.
        self.not_ready: set[str] = set()
        self._next_step = 0.0  # loop time before which no save step starts (SAVE_REST)
        self._last_batch = float("-inf")  # loop time of the last batch answered
        self._work = asyncio.Event()  # something was queued (or close/shutdown began)
        self._room = asyncio.Event()  # bytes were freed
        self._idle = asyncio.Event()  # nothing queued, nothing in flight
        self._idle.set()
        self._closing = False
        self.deadline: float | None = None  # loop time after which unstarted events are refused
        self.failure: BaseException | None = None
        self.batches = 0
        self.events = 0
        self.refused_at_shutdown = 0

    # ------------------------------------------------------------------ submitting

    def _check(self) -> None:
        if self.failure is not None:
            raise NotStored(ErrorCode.INTERNAL_ERROR, "the writer failed; the event was not stored")
        if self.deadline is not None and asyncio.get_running_loop().time() >= self.deadline:
            raise NotStored(ErrorCode.SHUTTING_DOWN, SHUTDOWN_MESSAGE)

    def admits(self, world: str, size: int) -> bool:
        """Whether an event of ``size`` bytes for ``world`` fits the queue now."""
        if not self._queues.get(world):
            return True  # a world with nothing queued always gets one in: fairness
        return (
            self._world_bytes.get(world, 0) + size <= self.world_budget
            and self.queued_bytes + size <= self.total_budget
        )

    async def submit(self, world: str, event: WorldEvent, size: int) -> asyncio.Future[EventResult]:
        """Queue one event (waits while its world's queue is full: backpressure on the sender).

        Raises :class:`NotStored` at once if the writer failed or shutdown has passed its
        deadline; otherwise the future resolves after commit (or with :class:`NotStored`).
        """
        self._check()
        if world in self.saving:
            raise world_busy(world)
        while not self.admits(world, size):
            self._room.clear()
            await self._room.wait()
            self._check()
            if world in self.saving:
                raise world_busy(world)
        future: asyncio.Future[EventResult] = asyncio.get_running_loop().create_future()
        queue = self._queues.get(world)
        if queue is None:
            queue = self._queues[world] = deque()
        if not queue:
            self._turns.append(world)
        queue.append(Submission(world=world, event=event, size=size, future=future))
        self._world_bytes[world] = self._world_bytes.get(world, 0) + size
        self.queued_bytes += size
        self.queued += 1
        self._idle.clear()
        self._work.set()
        return future

    async def save(self, world: str, begin: Callable[[], Build]) -> WorldInfo:
        """Build the new world ``world`` (``begin`` starts the save, on the writer's thread)
        step by step between batches; return once it is whole.

        Raises :class:`NotStored`: ``world_busy`` if a save into ``world`` is queued or under
        way, ``shutting_down`` if the sidecar stops first (nothing of the save is left);
        and whatever the save itself raises (then nothing of it is left either).
        """
        self._check()
        if self.deadline is not None or self._closing:
            raise NotStored(ErrorCode.SHUTTING_DOWN, _SAVE_STOPPED)
        if world in self.saving and world not in self.removing:
            raise world_busy(world)  # (a deleted world's id: the save waits for its rows to go)
        future: asyncio.Future[WorldInfo] = asyncio.get_running_loop().create_future()
        self._saves.append(_Save(world, begin, future))
        self.saving.add(world)
        self._work.set()
        return await future

    # ------------------------------------------------------------------ lifecycle

    async def drain(self) -> None:
        """Wait until everything queued so far is committed (or refused)."""
        await self._idle.wait()

    def shut_down(self, grace: float) -> None:
        """Stop taking new batches ``grace`` seconds from now; refuse what is left then."""
        deadline = asyncio.get_running_loop().time() + grace
        self.deadline = deadline if self.deadline is None else min(self.deadline, deadline)
        self._work.set()

    async def close(self, task: asyncio.Task[None] | None = None) -> None:
        """Finish (see :meth:`shut_down`), end :meth:`run` and release the store."""
        self._closing = True
        self._work.set()
        if task is not None:
            await task
        self.executor.shutdown(wait=True)
        self.writer.close()

    async def run(self) -> None:
        """The writer loop, until :meth:`close`. Never raises (see the module docstring)."""
        try:
            await self._loop()
        except asyncio.CancelledError:
            self._inflight = []  # it may still commit in its thread: neither acked nor refused
            self._refuse_all(NotStored(ErrorCode.SHUTTING_DOWN, SHUTDOWN_MESSAGE))
            raise
        except BaseException as exc:  # supervised: recorded, logged, answered; not re-raised
            self.failure = exc
            log.error(
                "the writer failed: no event can be stored until the sidecar is restarted "
                "(%s: %s)", type(exc).__name__, exc, exc_info=exc,
            )  # fmt: skip
            self._refuse_all(
                NotStored(ErrorCode.INTERNAL_ERROR, "the writer failed; the event was not stored")
            )

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if self._saves and self._stopping():
                await self._abort_saves()
                continue
            if self._turns and self.deadline is not None and loop.time() >= self.deadline:
                self._refuse_unstarted()
                continue
            if not self._ready():
                if not self._turns:
                    self._idle.set()  # (drain waits for events only, not for saves)
                if self._saves and not self._save_waits():
                    await self._save_step()
                elif self._turns or self._saves:  # a file not ready, or a save behind one
                    await self._rest()
                elif not await self._idle_until_work():
                    return
                continue
            batch = self._inflight = self._take()
            self._room.set()
            acked: set[int] = set()  # (positions in the batch answered as their world committed)
            # Shielded: a shutdown while SQLite commits must not abandon the batch.
            held, results = await asyncio.shield(
                loop.run_in_executor(self.executor, self._apply, batch, acked, loop)
            )
            self._inflight = []
            if acked:
                batch = [item for i, item in enumerate(batch) if i not in acked]
            if held:
                batch = self._hold(batch, held)
            if isinstance(results, StorageFailure):
                self._not_stored(batch, results)
                continue
            if acked or batch:  # (a batch whose every world was held wrote nothing)
                self.batches += 1
                self._last_batch = loop.time()
            self._deliver(batch, results)
            if self._saves:
                await self._save_step()

    def _apply(
        self, batch: list[Submission], acked: set[int], loop: asyncio.AbstractEventLoop
    ) -> tuple[dict[str, Future[None]], list[EventResult] | StorageFailure]:
        """On the writer's thread: the worlds of ``batch`` whose file is being opened or
        upgraded (none of their events applied), and the results of the others' events that
        are not answered yet (or the failure that refused those, nothing of them stored).

        In a data directory each world is its own transaction: as each commits, its events
        are answered at once (their positions go in ``acked``, and their results are left
        out here), so a world's acks never wait for another world's file to be opened and
        written in the same batch."""
        pairs = [(item.world, item.event) for item in batch]
        holding = getattr(self.writer, "apply_or_hold", None)  # (a data directory's)

        def committed(positions: list[int], results: list[EventResult]) -> None:
            acked.update(positions)
            loop.call_soon_threadsafe(self._deliver, [batch[i] for i in positions], results)

        try:
            if holding is None:
                return {}, self.writer.apply(pairs)
            held: dict[str, Future[None]]
            held, results = holding(pairs, committed)
        except StorageFailure as exc:  # (what is not answered is refused: a held event too)
            return {}, exc
        applied = [i for i, (world, _) in enumerate(pairs) if world not in held]
        return held, [r for i, r in zip(applied, results, strict=True) if i not in acked]

    def _hold(self, batch: list[Submission], held: dict[str, Future[None]]) -> list[Submission]:
        """Put back the events of ``batch`` for the ``held`` worlds (whose file is being
        opened or upgraded) at the head of their queues, in order; they wait there, and the
        world takes its turns again, once its future is done. Returns the rest of the
        batch."""
        loop = asyncio.get_running_loop()
        for world, future in held.items():
            back = [item for item in batch if item.world == world]
            queue = self._queues.get(world)
            if queue is None:
                queue = self._queues[world] = deque()
                self._turns.append(world)
            queue.extendleft(reversed(back))
            size = sum(item.size for item in back)
            self._world_bytes[world] = self._world_bytes.get(world, 0) + size
            self.queued_bytes += size
            self.queued += len(back)
            if world not in self.not_ready:
                self.not_ready.add(world)
                asyncio.wrap_future(future, loop=loop).add_done_callback(
                    functools.partial(self._file_ready, world)
                )
        return [item for item in batch if item.world not in held]

    def _file_ready(self, world: str, future: asyncio.Future[None]) -> None:
        if not future.cancelled():
            future.exception()  # (a failure is the store's to report, at the world's next open)
        self.not_ready.discard(world)
        self._work.set()

    def _ready(self) -> bool:
        """Whether a queued event can go in a batch now (its world's file is ready)."""
        if not self.not_ready:
            return bool(self._turns)
        return any(world not in self.not_ready for world in self._turns)

    def _save_waits(self) -> bool:
        """Whether the first save waits for its world's queued events (held back: its file
        is not ready)."""
        job = self._saves[0]
        return job.build is None and job.world in self._queues

    async def _rest(self) -> None:
        """Nothing can go now: wait for work, a held world's file or the shutdown deadline."""
        self._work.clear()
        timeout = None
        if self.deadline is not None:
            timeout = max(0.0, self.deadline - asyncio.get_running_loop().time())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._work.wait(), timeout)

    def _stopping(self) -> bool:
        return self._closing or self.deadline is not None

    async def _save_step(self) -> None:
        """One step of the first save (its start, one chunk, or its last chunk and commit) on
        the writer's thread; answer it once it is whole or failed (nothing of it left)."""
        loop = asyncio.get_running_loop()
        rest = self._next_step - loop.time()
        if rest > 0:  # the writer rests between steps: see SAVE_REST
            if not self._ready():
                self._work.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._work.wait(), rest)
            return  # (the loop comes back: a batch if work came, else this step)
        job = self._saves[0]
        if job.build is None and job.world in self._queues:
            return  # events for that world came before the save: they go first
        elsewhere: Future[None] | None = getattr(job.build, "elsewhere", None)
        if elsewhere is not None and not elsewhere.done():  # built in a worker process
            if not self._ready():
                self._work.clear()
                waiter = asyncio.ensure_future(self._work.wait())
                either: set[asyncio.Future[Any]] = {waiter, asyncio.wrap_future(elsewhere)}
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
            return

        def step() -> WorldInfo | None:
            try:
                if job.build is None:
                    job.build = job.begin()
                    if job.build.settled is None:  # (a delete goes on: it may be done)
                        return None
                return job.build.commit() if job.build.step() else None
            except BaseException:
                if job.build is not None:
                    job.build.abort()
                raise

        started = loop.time()
        try:
            # Shielded: a shutdown while SQLite commits must not abandon the step.
            info = await asyncio.shield(loop.run_in_executor(self.executor, step))
        except Exception as exc:
            self._end_save(job)
            if not job.future.done():
                job.future.set_exception(exc)
            return
        finally:
            now = loop.time()
            busy = now - self._last_batch < _ACTIVE_SECONDS  # other worlds are writing
            self._next_step = now + SAVE_REST * (now - started) if busy else now
        if info is not None:
            self._end_save(job)
        # A delete is answered once begun (it has taken effect, whole); its id stays busy
        # while its rows are tidied away in the later steps.
        reply = info if info is not None else job.build.settled if job.build else None
        if reply is not None and not job.future.done():
            if info is None:
                self.removing.add(job.world)
            job.future.set_result(reply)

    def _end_save(self, job: _Save) -> None:
        self._saves.remove(job)
        self.removing.discard(job.world)
        if not any(other.world == job.world for other in self._saves):
            self.saving.discard(job.world)

    async def _abort_saves(self) -> None:
        """Stopping: every save not yet whole is refused and what it built removed."""
        loop = asyncio.get_running_loop()
        while self._saves:
            job = self._saves[0]
            build = job.build
            if build is not None:
                try:
                    await asyncio.shield(loop.run_in_executor(self.executor, build.abort))
                except Exception:
                    log.exception("removing the unfinished save of world %r failed", job.world)
            self._end_save(job)
            if not job.future.done():
                job.future.set_exception(NotStored(ErrorCode.SHUTTING_DOWN, _SAVE_STOPPED))

    async def _idle_until_work(self) -> bool:
        """Nothing queued: say so (``drain`` waits for it) and wait for work; ``False`` once
        the service is closing, which ends the loop."""
        self._idle.set()
        if self._closing:
            return False
        self._work.clear()
        await self._work.wait()
        return True

    def _refuse_unstarted(self) -> None:
        """Past the shutdown deadline: every event not yet started is refused, none stored."""
        self.refused_at_shutdown += self.queued
        self._refuse_all(NotStored(ErrorCode.SHUTTING_DOWN, SHUTDOWN_MESSAGE))

    def _not_stored(self, batch: list[Submission], exc: StorageFailure) -> None:
        """A batch whose commit failed: every event of it is refused, none was stored."""
        log.error("batch of %d events not stored: %s", len(batch), exc)
        refusal = NotStored(ErrorCode.INTERNAL_ERROR, "event was not stored; retry")
        for item in batch:
            if not item.future.done():
                item.future.set_exception(refusal)

    def _deliver(self, batch: list[Submission], results: list[EventResult]) -> None:
        """Committed events (a batch, or one world's part of it): their notifications go
        out, then each event's result (its ack)."""
        self.events += len(batch)
        try:
            self.publish_results(results)
        finally:
            for item, result in zip(batch, results, strict=True):
                if not item.future.done():
                    item.future.set_result(result)

    def _take(self) -> list[Submission]:
        """The next batch: one event per world in turn, within the count and byte bounds."""
        batch: list[Submission] = []
        size = 0
        waiting = 0  # turns passed over in a row: their world's file is not ready
        while self._turns and len(batch) < self.max_batch and waiting < len(self._turns):
            world = self._turns[0]
            if world in self.not_ready:
                self._turns.rotate(-1)
                waiting += 1
                continue
            waiting = 0
            queue = self._queues[world]
            item = queue[0]
            if batch and size + item.size > self.max_batch_bytes:
                break
            queue.popleft()
            self._turns.popleft()
            if queue:
                self._turns.append(world)  # back of the line: the next world goes first
            else:
                del self._queues[world]
            self._world_bytes[world] -= item.size
            if not self._world_bytes[world]:
                del self._world_bytes[world]
            self.queued_bytes -= item.size
            self.queued -= 1
            size += item.size
            batch.append(item)
        return batch

    def _refuse_all(self, error: NotStored) -> None:
        """Answer every event in flight or queued with ``error`` (nothing of them stored)."""
        for item in self._inflight:
            if not item.future.done():
                item.future.set_exception(error)
        self._inflight = []
        for queue in self._queues.values():
            for item in queue:
                if not item.future.done():
                    item.future.set_exception(error)
        for job in self._saves:  # (their rows or files: removed when the store next opens)
            if not job.future.done():
                job.future.set_exception(error)
        self._saves.clear()
        self.saving.clear()
        self.removing.clear()
        self._queues.clear()
        self._turns.clear()
        self._world_bytes.clear()
        self.queued_bytes = self.queued = 0
        self._room.set()  # waiting submitters re-check, and are refused
        self._idle.set()

    def publish_results(self, results: Sequence[EventResult]) -> None:
        by_world: dict[str, list[EventResult]] = {}
        for result in results:
            if result.changes:
                by_world.setdefault(result.world, []).append(result)
        for world, world_results in by_world.items():
            try:
                self.publish(world, world_results)
            except Exception:  # a fan-out bug must not lose acks
                log.exception("publishing changes of world %r failed", world)


_SAVE_STOPPED = (
    "the sidecar is shutting down: the save was not made and nothing of it is left; "
    "send it again after reconnecting"
)

SHUTDOWN_MESSAGE = (
    "the sidecar is shutting down and had not started this event: it was not stored; "
    "resend it after reconnecting"
)
