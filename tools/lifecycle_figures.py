"""Figures for the world lifecycle: replay, export, import, fork, list, delete, rebuild.

``python -m tools.lifecycle_figures [N]`` builds a synthetic town of N events (default 5000,
``tools.town``) in a temporary database and prints how long each operation takes, plus the
cost of the metrics hook per outbound frame. It asserts no speed; it prints figures.
"""

from __future__ import annotations

import itertools
import sys
import tempfile
import time
import timeit
from pathlib import Path

from sidecar.engine import DEFAULT_RULES, parse_event
from sidecar.server.metrics import Metrics
from sidecar.store import SingleFile, export_world, import_world, rebuild
from tools.town import Town

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else 5000
    events = [parse_event(e) for _, e in itertools.islice(Town(50, seed=1), n)]
    with tempfile.TemporaryDirectory(prefix="credence-lifecycle-") as tmp_name:
        tmp = Path(tmp_name)
        store = SingleFile(tmp / "a.db", synchronous="NORMAL")
        try:
            t = time.perf_counter()
            info = store.import_events("town", DEFAULT_RULES, events)
            replay = time.perf_counter() - t
            t = time.perf_counter()
            export_world(store, "town", tmp / "town.credence")
            export = time.perf_counter() - t
            size = (tmp / "town.credence").stat().st_size
            t = time.perf_counter()
            import_world(store, tmp / "town.credence", "copy")
            imported = time.perf_counter() - t
            t = time.perf_counter()
            store.fork("town", "half", n // 2)
            fork = time.perf_counter() - t
            t = time.perf_counter()
            store.worlds()
            listing = time.perf_counter() - t
            t = time.perf_counter()
            store.delete("copy")
            delete = time.perf_counter() - t
        finally:
            store.close()
        t = time.perf_counter()
        ok = rebuild(tmp / "a.db").ok
        rebuilt = time.perf_counter() - t
    print(f"{n} town events ({info.changes} changes, {info.beliefs} beliefs), synchronous=NORMAL")
    print(f"  replay into a new world   {replay:7.2f} s  ({n / replay:.0f} events/s)")
    print(f"  export                    {export:7.2f} s  ({size / 1e6:.2f} MB)")
    print(f"  import (checksum, replay) {imported:7.2f} s")
    print(f"  fork at seq {n // 2:<13} {fork:7.2f} s")
    print(f"  worlds (3 worlds)         {listing * 1000:7.1f} ms")
    print(f"  delete                    {delete:7.2f} s")
    print(f"  rebuild --check (2 worlds){rebuilt:7.2f} s  ok={ok}")
    metrics = Metrics(lambda: 0, lambda: 0)
    ack = {"type": "ack", "event_id": "e1", "duplicate": False, "changes": 2, "seq": 9}
    belief = {"type": "belief", "seq": 1}
    k = 100_000
    per_ack = timeit.timeit(lambda: metrics.observe_frame(ack), number=k) / k
    per_belief = timeit.timeit(lambda: metrics.observe_frame(belief), number=k) / k
    print(
        f"  metrics hook per frame    ack {per_ack * 1e9:.0f} ns, belief {per_belief * 1e9:.0f} ns"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
