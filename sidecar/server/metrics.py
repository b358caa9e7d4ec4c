"""Prometheus metrics of one sidecar, served at ``GET /metrics`` on the WebSocket port.

Each :class:`Sidecar` owns its own :class:`~prometheus_client.CollectorRegistry` (never the
process-global one), so several sidecars in one process — tests, an embedding game server —
each report their own numbers.

=====================================  =========  ===========================================
metric                                 type       what
=====================================  =========  ===========================================
credence_events_total                  counter    events the writer took up (each once)
credence_acks_total{result}            counter    acks sent: applied, duplicate
credence_refusals_total{code}          counter    error frames sent, by wire error code
credence_notifications_total           counter    belief notifications queued to subscribers
credence_batch_size                    histogram  events per group-commit batch
credence_commit_seconds                histogram  time to apply and commit one batch
credence_queue_depth                   gauge      events waiting for the writer
credence_connections                   gauge      open WebSocket connections
=====================================  =========  ===========================================
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST

log = logging.getLogger("credence.refusals")

_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
_COMMIT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Metrics:
    """The sidecar's counters; ``observe_frame`` sees every frame sent to a peer."""

    def __init__(self, queue_depth: Callable[[], float], connections: Callable[[], float]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.events = Counter("credence_events", "Events the writer took up", registry=r)
        self.acks = Counter("credence_acks", "Acks sent", ["result"], registry=r)
        self.refusals = Counter(
            "credence_refusals", "Error frames sent, by wire error code", ["code"], registry=r
        )
        self.notifications = Counter(
            "credence_notifications", "Belief notifications queued to subscribers", registry=r
        )
        self.batch_size = Histogram(
            "credence_batch_size", "Events per group-commit batch", buckets=_BATCH_BUCKETS,
            registry=r,
        )  # fmt: skip
        self.commit_seconds = Histogram(
            "credence_commit_seconds", "Seconds to apply and commit one batch",
            buckets=_COMMIT_BUCKETS, registry=r,
        )  # fmt: skip
        Gauge("credence_queue_depth", "Events waiting for the writer", registry=r).set_function(
            queue_depth
        )
        Gauge("credence_connections", "Open WebSocket connections", registry=r).set_function(
            connections
        )
        self._acks_applied = self.acks.labels("applied")
        self._acks_duplicate = self.acks.labels("duplicate")

    def observe_frame(self, frame: dict[str, Any], conn_id: int = 0) -> None:
        """Count one outbound frame; refusals are also logged at DEBUG (never a token)."""
        kind = frame.get("type")
        if kind == "belief":
            self.notifications.inc()
        elif kind == "ack":
            (self._acks_duplicate if frame.get("duplicate") else self._acks_applied).inc()
        elif kind == "error":
            code = str(frame.get("code"))
            self.refusals.labels(code).inc()
            if log.isEnabledFor(logging.DEBUG):
                log.debug(
                    "conn %d refused: code=%s event_id=%r reason=%s",
                    conn_id, code, frame.get("event_id"), frame.get("reason"),
                )  # fmt: skip

    def observe_batch(self, size: int, seconds: float) -> None:
        self.events.inc(size)
        self.batch_size.observe(size)
        self.commit_seconds.observe(seconds)

    def exposition(self) -> bytes:
        """The text exposition format of every metric of this sidecar."""
        return generate_latest(self.registry)
