"""One module per ``credence`` subcommand: ``add_parser(subparsers)`` sets ``run``."""

from __future__ import annotations

import sys

__all__ = ["fail", "one_line"]


def one_line(message: str) -> str:
    """A message as stderr prints it: one line, whatever it quotes (a file name, an id)."""
    return " ".join(message.splitlines()) if "\n" in message or "\r" in message else message


def fail(prog: str, message: str) -> int:
    """Print ``credence PROG: MESSAGE`` as one stderr line; the usage-error status, 2."""
    print(f"credence {prog}: {one_line(message)}", file=sys.stderr)
    return 2
