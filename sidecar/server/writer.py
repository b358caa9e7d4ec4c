"""The writer service: group commit off the event loop.

Connections submit events and get a future. One task drains everything queued into a batch,
hands it to the store's single :class:`~sidecar.store.Writer` in a dedicated thread (the
event loop never waits on SQLite), and once the batch is committed publishes the change
records and resolves the futures, in submission order. Under load many events share one
transaction, so throughput does not collapse to one fsync per event.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..engine import WorldEvent
from ..store import EventResult, StorageFailure, Writer

__all__ = ["WriterService"]

log = logging.getLogger("credence.writer")

Publish = Callable[[str, Sequence[EventResult]], None]


@dataclass(slots=True)
class _Item:
    world: str
    event: WorldEvent
    future: asyncio.Future[EventResult]


class WriterService:
    """Owns the store writer; ``submit`` queues an event, the future resolves after commit."""

    def __init__(
        self, writer: Writer, publish: Publish, *, max_batch: int = 2000, max_queue: int = 20000
    ) -> None:
        self.writer = writer
        self.publish = publish
        self.max_batch = max_batch
        self.queue: asyncio.Queue[_Item] = asyncio.Queue(max_queue)
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="credence-writer")
        self.task: asyncio.Task[None] | None = None
        self.batches = 0
        self.events = 0

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._run(), name="credence-writer")

    async def submit(self, world: str, event: WorldEvent) -> asyncio.Future[EventResult]:
        """Queue one event (waits while the queue is full: backpressure on the sender)."""
        future: asyncio.Future[EventResult] = asyncio.get_running_loop().create_future()
        await self.queue.put(_Item(world, event, future))
        return future

    async def drain(self) -> None:
        """Wait until everything queued so far is committed."""
        await self.queue.join()

    async def close(self) -> None:
        await self.drain()
        if self.task is not None:
            self.task.cancel()
            try:
                await self.task
            except asyncio.CancelledError:
                pass
        self.executor.shutdown(wait=True)
        self.writer.close()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self.queue.get()]
            while len(batch) < self.max_batch and not self.queue.empty():
                batch.append(self.queue.get_nowait())
            pairs = [(item.world, item.event) for item in batch]
            try:
                # Shielded: a shutdown while SQLite commits must not abandon the batch.
                results = await asyncio.shield(
                    loop.run_in_executor(self.executor, self.writer.apply, pairs)
                )
            except StorageFailure as exc:
                log.error("batch of %d events not stored: %s", len(batch), exc)
                for item in batch:
                    if not item.future.done():
                        item.future.set_exception(exc)
                    self.queue.task_done()
                continue
            self.batches += 1
            self.events += len(batch)
            try:
                self.publish_results(results)
            finally:
                for item, result in zip(batch, results, strict=True):
                    if not item.future.done():
                        item.future.set_result(result)
                    self.queue.task_done()

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
