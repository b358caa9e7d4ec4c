"""A 30-day town where the old narrative failed (issue 10): ordinary facts crowd out hearsay.

``python -m tools.crowded_town DB`` writes it into a fresh database (world ``crowded``):
Mira sees 150 trees and 40 fence posts twice each (sure, ordinary), fetches water 20 times
and is refused once, hears three rumours, one a lie of Bo's about the well that she later
sees through. The README shows ``credence narrative`` on it before and after issue 10.
``--no-register`` leaves out the registry (for a sidecar that does not know the event).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sidecar.engine import parse_event
from sidecar.store import ResultStatus, Writer

__all__ = ["WORLD", "events", "main"]

WORLD = "crowded"


def events(*, register: bool = True) -> list[dict[str, Any]]:
    """The town's world log, in order."""
    out: list[dict[str, Any]] = []
    n = 0

    def add(day: float, kind: str, **fields: Any) -> None:
        nonlocal n
        n += 1
        out.append({"event_id": f"c{n}", "day": day, "kind": kind, **fields})

    if register:
        names = (("mira", "Mira", "米拉"), ("bo", "Bo", "阿博"), ("tom", "Old Tom", "老湯姆"),
                 ("kai", "Kai", "阿凱"), ("ana", "Ana", "安娜"), ("lena", "Lena", "蕾娜"),
                 ("doc", "the doctor", "醫生"), ("miller", "the miller", "磨坊主人"))  # fmt: skip
        add(0, "register",
            residents=[{"resident": r, "names": {"en": en, "zh-Hant": zh}} for r, en, zh in names],
            actions=[{"action": "fetch_water", "names": {"en": "fetch water", "zh-Hant": "打水"}}])  # fmt: skip
    for day in (1, 2):
        for i in range(150):
            add(day, "observe", witnesses=["mira"], claim={"root": f"tree:{i}", "value": "oak"},
                subject=f"an old oak stands at the crossing {i}")  # fmt: skip
        for i in range(40):
            add(day, "observe", witnesses=["mira"], claim={"root": f"fence:{i}", "value": "sound"},
                subject=f"fence post {i} is sound")  # fmt: skip
    for day in range(3, 23):
        add(day, "act", actor="mira", action="fetch_water", status="completed", witnesses=["kai"])
    add(23, "act", actor="mira", action="fetch_water", status="rejected", witnesses=["kai"])
    add(24, "say", speaker="bo", listeners=["mira"], topic="health", importance=0.8,
        claim={"root": "water:well", "value": "poisoned"}, subject="the well water is poisoned",
        places=["well"])  # fmt: skip
    add(25, "say", speaker="tom", listeners=["mira"],
        claim={"root": "festival:day", "value": 30}, subject="the harvest festival is on day 30")  # fmt: skip
    add(26, "say", speaker="kai", listeners=["mira"], people=["miller"],
        claim={"root": "mill:debt", "value": True}, subject="the miller owes Ana money")  # fmt: skip
    for day in (27, 28):
        add(day, "observe", witnesses=["mira"], claim={"root": "water:well", "value": "clean"},
            subject="the well water is clean", places=["well"])  # fmt: skip
    add(30, "tick")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path, help="a database file (created; must not exist)")
    parser.add_argument("--no-register", action="store_true", help="leave out the registry")
    args = parser.parse_args(argv)
    if args.db.exists():
        parser.error(f"{args.db} exists")
    writer = Writer(args.db, synchronous="OFF")
    try:
        batch = [(WORLD, parse_event(e)) for e in events(register=not args.no_register)]
        bad = [r for r in writer.apply(batch) if r.status is not ResultStatus.APPLIED]
        if bad:
            print(bad[0])
            return 1
    finally:
        writer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
