"""``credence replay FILE``: re-send a capture or a JSONL scenario and record the notifications.

Exit status: 0 when the replay ran (and, with ``--expect``, matched the golden file), 1 when
``--expect`` found a difference, 2 when the input, the golden file or the sidecar could not
be used. The summary and any refused frames go to stderr, so stdout stays machine-readable.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..engine import Bound
from . import number

if TYPE_CHECKING:
    from tools.replay import ReplayResult


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay",
        help="replay a capture or a JSONL scenario and record every belief notification",
        description=(
            "Replay FILE (a `serve --capture` file or a JSONL scenario) over the real wire, or "
            "with --offline straight through the engine, and write every belief notification "
            "as one JSON line with sorted keys."
        ),
    )
    p.add_argument("file", type=Path, metavar="FILE", help="capture file or JSONL scenario")
    p.add_argument(
        "--url",
        help="sidecar to replay into, e.g. ws://127.0.0.1:8765 (default: start one in-process "
        "on a temporary database)",
    )
    p.add_argument("--token", help="token for every hello (captured tokens are redacted)")
    pace = p.add_mutually_exclusive_group()
    pace.add_argument(
        "--speed",
        type=number(Bound(float, 0.001, 1_000_000)),
        metavar="X",
        help="pace a capture by its recorded receive times divided by X (scenarios carry no times)",
    )
    pace.add_argument(
        "--max",
        action="store_true",
        help="as fast as the recorded global order allows (the default)",
    )
    p.add_argument(
        "--out", type=Path, metavar="NOTIFS", help="write the notifications here (JSONL)"
    )
    p.add_argument(
        "--expect",
        type=Path,
        metavar="GOLDEN",
        help="compare with this golden JSONL; show a diff and exit 1 on any difference",
    )
    p.add_argument(
        "--offline",
        action="store_true",
        help="no server, no SQLite: fold the events through the in-memory engine",
    )
    p.set_defaults(run=run)


def _fail(message: str) -> int:
    print(f"credence replay: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from tools.replay import ReplayError, ScriptError, load, replay_offline, replay_online

    if args.offline and (args.url or args.token or args.speed is not None):
        return _fail("--offline uses no sidecar: it takes no --url, --token or --speed")
    try:
        script = load(args.file)
        if args.expect is not None:
            args.expect.open(encoding="utf-8").close()  # unreadable: said before the replay
    except ScriptError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{args.expect}: cannot read the golden file: {exc.strerror or exc}")
    try:
        if args.offline:
            result, mode = replay_offline(script), "offline (engine only)"
        else:
            try:
                result = asyncio.run(
                    replay_online(script, args.url, token=args.token, speed=args.speed)
                )
            except (OSError, ValueError) as exc:  # refused connection, bad URI, failed upgrade
                if isinstance(exc, ScriptError):
                    raise
                return _fail(f"cannot replay into {args.url}: {exc}")
            mode = f"into {args.url}" if args.url else "into an in-process sidecar"
    except (ReplayError, ScriptError) as exc:
        return _fail(str(exc))
    try:
        return _report(args, result, mode)
    finally:
        result.spool.close()


def _report(args: argparse.Namespace, result: ReplayResult, mode: str) -> int:
    """Print the summary, write the notifications (streamed: a long replay is never held
    whole) and compare them with the golden file, if one was given."""
    from tools.replay import ScriptError, compare, same

    print(
        f"replayed {result.frames} frame(s) of {result.connections} connection(s) {mode}: "
        f"{result.spool.count} notification(s), {len(result.refusals)} refusal(s)",
        file=sys.stderr,
    )
    for refusal in result.refusals:
        print(f"  refused {refusal}", file=sys.stderr)
    if args.out is not None:
        with open(args.out, "w", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in result.lines())
    elif args.expect is None:
        sys.stdout.writelines(line + "\n" for line in result.lines())
    if args.expect is None:
        return 0
    try:
        with open(args.expect, encoding="utf-8") as golden:
            if same(golden, result.lines(), str(args.expect)):
                print(f"OK: {result.spool.count} notification(s) match {args.expect}")
                return 0
        with open(args.expect, encoding="utf-8") as golden:  # (lines end at "\n" only)
            expected = list(golden)
        diff = compare(
            expected,
            list(result.lines()),
            str(args.expect),
            "replay",
        )
    except ScriptError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{args.expect}: cannot read the golden file: {exc.strerror or exc}")
    print("\n".join(diff))
    print(f"MISMATCH: the replay differs from {args.expect}")
    return 1
