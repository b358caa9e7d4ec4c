"""One module per ``credence`` subcommand: ``add_parser(subparsers)`` sets ``run``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from ..engine import Bound

__all__ = ["fail", "number", "numbers", "one_line"]


def one_line(message: str) -> str:
    """A message as stderr prints it: one line, whatever it quotes (a file name, an id)."""
    return " ".join(message.splitlines()) if "\n" in message or "\r" in message else message


def fail(prog: str, message: str) -> int:
    """Print ``credence PROG: MESSAGE`` as one stderr line; the usage-error status, 2."""
    print(f"credence {prog}: {one_line(message)}", file=sys.stderr)
    return 2


def number(bound: Bound) -> Callable[[str], int | float]:
    """An argparse ``type`` checking a flag's number against ``bound`` (the same check a config
    key or a frame field of that number gets): a bad one is argparse's one-line usage error."""

    def parse(text: str) -> int | float:
        try:
            return bound.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def numbers(bound: Bound, *, most: int = 32) -> Callable[[str], list[int | float]]:
    """An argparse ``type`` for a comma-separated list (``50,100,200``), each number checked
    against ``bound`` as :func:`number` checks one; at least one and at most ``most``."""

    def parse(text: str) -> list[int | float]:
        parts = text.split(",")
        if not 1 <= len(parts) <= most or not all(p.strip() for p in parts):
            raise argparse.ArgumentTypeError(
                f"must be 1 to {most} comma-separated numbers, not {text!r:.40}"
            )
        try:
            return [bound.parse(part.strip()) for part in parts]
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"each {exc}") from None

    return parse
