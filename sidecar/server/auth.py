"""Per-world tokens: a writer token and a read-only token per world.

Tokens are compared in constant time and never logged. With no token configured at all the
sidecar runs in *open mode*: it only binds to loopback and accepts any token or none.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

__all__ = ["ANY_WORLD", "Auth", "Role", "parse_token_spec"]

ANY_WORLD = "*"


class Role(StrEnum):
    WRITER = "writer"
    READER = "reader"


def parse_token_spec(spec: str) -> tuple[str, str]:
    """``WORLD=SECRET`` → (world, secret); a bare ``SECRET`` applies to every world."""
    world, sep, secret = spec.partition("=")
    if not sep:
        return ANY_WORLD, spec
    if not world or not secret:
        raise ValueError("a token is SECRET or WORLD=SECRET, with neither part empty")
    return world, secret


@dataclass(slots=True)
class Auth:
    writers: dict[str, list[str]] = field(default_factory=dict)
    readers: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_specs(cls, writer_specs: Iterable[str] = (), reader_specs: Iterable[str] = ()) -> Auth:
        auth = cls()
        for spec in writer_specs:
            world, secret = parse_token_spec(spec)
            auth.writers.setdefault(world, []).append(secret)
        for spec in reader_specs:
            world, secret = parse_token_spec(spec)
            auth.readers.setdefault(world, []).append(secret)
        return auth

    @property
    def open(self) -> bool:
        return not self.writers and not self.readers

    def role_for(self, world: str, token: str | None) -> Role | None:
        """The role ``token`` grants in ``world``, or ``None`` if it grants nothing there."""
        if self.open:
            return Role.WRITER
        if not token:
            return None
        if _matches(token, self.writers.get(world, []) + self.writers.get(ANY_WORLD, [])):
            return Role.WRITER
        if _matches(token, self.readers.get(world, []) + self.readers.get(ANY_WORLD, [])):
            return Role.READER
        return None


def _matches(token: str, secrets: list[str]) -> bool:
    given = token.encode()
    found = False
    for secret in secrets:  # no early exit: timing does not reveal which one matched
        found |= hmac.compare_digest(given, secret.encode())
    return found
