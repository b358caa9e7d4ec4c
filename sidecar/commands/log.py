"""``credence log``: a world's event log, a page at a time, to choose a fork point.

Each line is one event with its seq (what ``credence fork --at`` and the ``fork`` frame's
``at`` take), its day, kind, id, who spoke or acted and the game's subject. The output is
bounded (``--limit``, at most 1,000 events); the last line says how to ask for the next page.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from protocol.frames import EVENTS_PAGE, MAX_PAGE

from ..engine import MAX_SAFE_INTEGER, Bound
from ..store import Reader
from . import number
from ._reading import add_common, emit, with_reader

__all__ = ["add_parser", "day_text", "run"]


#: A seq to start from and a page size: the bounds the ``events`` query's frame fields have.
_SEQ = number(Bound(int, 1, MAX_SAFE_INTEGER))
_LIMIT = number(Bound(int, 1, MAX_PAGE))


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("log", help="list a world's events with their seq, day and kind")
    add_common(p)
    p.add_argument(
        "--from", dest="start", type=_SEQ, default=1, metavar="SEQ",
        help="first event seq to list (default 1)",
    )  # fmt: skip
    p.add_argument(
        "--limit", type=_LIMIT, default=EVENTS_PAGE, metavar="N",
        help=f"most events to list, 1-{MAX_PAGE} (default {EVENTS_PAGE})",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the events reply's fields as JSON")
    p.set_defaults(run=run)


def day_text(day: float) -> str:
    """A game day as a person reads it: ``day 25``, or ``day 25 07:25`` for a fraction."""
    whole = int(day)
    minutes = round((day - whole) * 24 * 60)
    if minutes >= 24 * 60:  # 25.99999 rounds up to the next day
        whole, minutes = whole + 1, 0
    return f"day {whole}" if minutes == 0 else f"day {whole} {minutes // 60:02d}:{minutes % 60:02d}"


def _page(reader: Reader, world: str, start: int, limit: int) -> dict[str, Any]:
    rows = reader.event_page(world, start=start, limit=limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    return {
        "world": world, "from": start, "last": reader.event_count(world),
        "next": rows[-1]["seq"] + 1 if more else None, "events": rows,
    }  # fmt: skip


def run(args: argparse.Namespace) -> int:
    code, page = with_reader("log", args, lambda r: _page(r, args.world, args.start, args.limit))
    if page is None:
        return code
    if args.json:
        emit(json.dumps(page, ensure_ascii=False, indent=2))
        return 0
    events = page["events"]
    width = max([len(str(e["seq"])) for e in events] + [3])
    lines = [f"{'seq':>{width}}  {'day':<13} {'kind':<9} {'event id':<16} {'by':<10} subject"]
    for e in events:
        subject = e["subject"] or ""
        lines.append(
            f"{e['seq']:>{width}}  {day_text(e['day']):<13} {e['kind']:<9} {e['event_id']:<16} "
            f"{e['by'] or '-':<10} {subject}".rstrip()
        )
    if not events:
        lines.append(f"(no events from seq {page['from']}; the log has {page['last']})")
    elif page["next"] is not None:
        lines.append(
            f"({page['last'] - page['next'] + 1} more: credence log --world {args.world} "
            f"--from {page['next']})"
        )
    emit("\n".join(lines))
    return 0
