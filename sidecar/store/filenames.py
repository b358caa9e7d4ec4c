"""World file names in a data directory: one name per world id, never shared, on any file system.

A data directory (``credence serve --data-dir``) keeps each world in ``<name>.db``. The name
must be a function of the id alone (a world is found without an index), and no two ids may
ever get the same name, *including on case-insensitive file systems* (macOS, Windows), where
``Town.db`` and ``town.db`` are one file. So a name only ever holds characters whose case
carries no information:

* ``a``–``z``, ``0``–``9``, ``-``, ``_`` stand for themselves, and so does ``.`` (except as the
  first character: names starting with a dot are this directory's own files);
* an upper-case ASCII letter is ``!`` and the letter in lower case (``Town`` → ``!town``,
  the Go module cache's trick: still readable);
* every other character is its UTF-8 bytes as ``%XX``, in upper-case hex (the position of
  those digits is fixed by the ``%``, so folding their case cannot make two names equal);
* a name whose part before the first dot is a Windows device name (``con``, ``nul``,
  ``com1`` …, reserved with any extension) has its first character escaped (``%63on``).

That encoding is decodable, so distinct ids get distinct names. An encoded id longer than
:data:`READABLE` characters (ids are at most 200 characters, but encoding can make them 12
times longer) is cut to a readable prefix and ends in ``@`` and the SHA-256 of the id. Plain
names never contain ``@`` (it is ``%40``), so a hashed name can only meet another hashed name,
and then only by a SHA-256 collision. The id itself is always stored inside the file.

The earlier scheme (percent-encoding with upper-case letters and ``~`` left as they were, and
``~`` + SHA-256 for long ids) let a world named ``~`` + the hash of another world's long id
share that world's file, and let ``Town`` and ``town`` share one on macOS; :func:`classify`
tells its names apart so a data directory can be migrated (see ``DataDir``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from enum import Enum
from urllib.parse import unquote

__all__ = [
    "HASH_MARK",
    "READABLE",
    "SUFFIX",
    "NameKind",
    "Parsed",
    "classify",
    "decode_name",
    "encode_name",
]

SUFFIX = ".db"
#: Longest encoded id kept whole as a file name (with the suffixes SQLite and we add, a name
#: stays far below the 255 bytes every common file system allows).
READABLE = 160
#: Length of the readable prefix of a hashed name.
PREFIX = 96
HASH_MARK = "@"
_UPPER = "!"
_LITERAL = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_.")
_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
)
_HEX = frozenset("0123456789abcdef")
_SIMPLE = re.compile(rf"[a-z0-9_-][a-z0-9._-]{{0,{READABLE - 1}}}")


def _escape(ch: str) -> str:
    return "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))


def _tokens(world: str) -> list[str]:
    """The id as encoded pieces, one per character (a prefix is cut between pieces)."""
    out = []
    for i, ch in enumerate(world):
        if ch in _LITERAL and not (i == 0 and ch == "."):
            out.append(ch)
        elif "A" <= ch <= "Z":
            out.append(_UPPER + ch.lower())
        else:
            out.append(_escape(ch))
    if out and "".join(out).split(".", 1)[0] in _DEVICES:
        out[0] = _escape(world[0])
    return out


def encode_name(world: str) -> str:
    """The file name stem of ``world`` (without :data:`SUFFIX`)."""
    tokens = _tokens(world)
    name = "".join(tokens)
    if len(name) <= READABLE:
        return name
    prefix, used = [], 0
    for token in tokens:
        if used + len(token) > PREFIX:
            break
        prefix.append(token)
        used += len(token)
    digest = hashlib.sha256(world.encode("utf-8", "surrogatepass")).hexdigest()
    return "".join(prefix) + HASH_MARK + digest


def decode_name(stem: str) -> str | None:
    """The id a plain (not hashed) stem names, or ``None`` if no id is encoded so."""
    out: list[bytes] = []
    i = 0
    while i < len(stem):
        ch = stem[i]
        if ch == "%":
            pair = stem[i + 1 : i + 3]
            if len(pair) != 2 or pair != pair.upper() or not set(pair.lower()) <= _HEX:
                return None
            out.append(bytes([int(pair, 16)]))
            i += 3
        elif ch == _UPPER:
            nxt = stem[i + 1 : i + 2]
            if not ("a" <= nxt <= "z"):
                return None
            out.append(nxt.upper().encode())
            i += 2
        elif ch in _LITERAL:
            out.append(ch.encode())
            i += 1
        else:
            return None
    try:
        world = b"".join(out).decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None
    return world if world and encode_name(world) == stem else None


class NameKind(Enum):
    PLAIN = "plain"  #: this scheme, the id is in the name
    HASHED = "hashed"  #: this scheme, the id is only inside the file
    OLD = "old"  #: the earlier scheme, id in the name (``Parsed.world``): to be renamed
    OLD_HASHED = "old_hashed"  #: the earlier ``~`` + SHA-256 name: to be renamed
    FOREIGN = "foreign"  #: no world file name of either scheme


@dataclass(frozen=True, slots=True)
class Parsed:
    kind: NameKind
    world: str | None = None  #: the id, when the name alone says it


def classify(stem: str) -> Parsed:
    """Which scheme named ``stem`` (a file name without :data:`SUFFIX`), and its id if known.

    The earlier scheme never wrote ``!`` or ``@`` (it percent-encoded them), and this one never
    writes ``~`` or an upper-case letter outside a ``%XX``; a name with neither is read the
    same way by both, so it names the same id whichever wrote it.
    """
    if _SIMPLE.fullmatch(stem) and stem.split(".", 1)[0] not in _DEVICES:
        return Parsed(NameKind.PLAIN, stem)  # (the common case, without decoding)
    if not stem or stem.startswith("."):
        return Parsed(NameKind.FOREIGN)
    if HASH_MARK in stem:
        prefix, _, digest = stem.rpartition(HASH_MARK)
        ok = len(digest) == 64 and set(digest) <= _HEX and HASH_MARK not in prefix
        return Parsed(NameKind.HASHED if ok else NameKind.FOREIGN)
    world = decode_name(stem)
    if world is not None:
        return Parsed(NameKind.PLAIN, world)
    if stem.startswith("~") and len(stem) == 65 and set(stem[1:]) <= _HEX:
        return Parsed(NameKind.OLD_HASHED)
    if _UPPER in stem:
        return Parsed(NameKind.FOREIGN)
    try:
        old = unquote(stem, errors="strict")
    except UnicodeDecodeError:
        return Parsed(NameKind.FOREIGN)
    return Parsed(NameKind.OLD, old) if old else Parsed(NameKind.FOREIGN)
