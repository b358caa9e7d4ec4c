"""The ``credence`` command line: each subcommand is a thin call into one library function."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

__all__ = ["COMMANDS", "build_parser", "main", "version_line"]

#: subcommand name -> module under ``sidecar.commands`` providing ``add_parser`` and ``run``.
COMMANDS: dict[str, str] = {
    "serve": "serve",
    "demo": "demo",
    "rebuild": "rebuild",
    "narrative": "narrative",
    "beliefs": "beliefs",
    "explain": "explain",
    "graph": "graph",
    "replay": "replay",
    "load": "load",
    "bench": "bench",
    "worlds": "worlds",
    "fork": "worlds",
    "export": "worlds",
    "import": "worlds",
    "delete": "worlds",
    "backup": "worlds",
}


def version_line() -> str:
    """What ``credence --version`` prints: the package and the wire protocol it speaks (a client
    checks the second against its own ``PROTOCOL_VERSION``)."""
    from protocol import PROTOCOL_VERSION

    from . import __version__

    return f"credence {__version__} (protocol {PROTOCOL_VERSION})"


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one stderr line and exit status 2, like every
    other error of the command line (``credence serve: argument --port: …``)."""

    def error(self, message: str) -> NoReturn:
        from .commands import one_line

        self.exit(2, f"{self.prog}: {one_line(message)} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="credence", description="Credence: a belief-revision sidecar for game NPCs."
    )
    parser.add_argument(
        "--version", action="version", version=version_line(), help="print the version and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in dict.fromkeys(COMMANDS.values()):  # (a module may add several commands)
        mod = importlib.import_module(f"sidecar.commands.{module}")
        mod.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
