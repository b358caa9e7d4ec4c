"""The resident registry as the read side sees it: display names per language.

The game registers residents (and, optionally, labels for its action ids) with a logged
``register`` event; the store keeps the names in ``residents.names`` and ``labels``. The
narrative uses them so that ids never appear where a name is known: a resident's own acts
read "I fetched water", another's "Mira fetched water". A name missing in the language
asked falls back to the English one, then to the id.

The world's optional root schema (a ``schema`` event) may give display text per language for
declared root prefixes; :func:`load_root_texts` picks it in the narrative's language (else
English), and the narrative names a root by it where the game's subject is absent and in
bulk lines ("things of this kind (the well water)").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..store import Reader

__all__ = ["Registry", "load_registry", "load_root_texts"]


@dataclass(frozen=True, slots=True)
class Registry:
    """Display names of residents and labels of actions, per language."""

    names: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    actions: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def name(self, resident: str, lang: str) -> str:
        """``resident``'s display name in ``lang`` (else English, else the id)."""
        names = self.names.get(resident) or {}
        return names.get(lang) or names.get("en") or resident

    def action(self, action: str, lang: str) -> str:
        """The label of ``action`` in ``lang`` (else English, else the id, ``_`` as spaces)."""
        labels = self.actions.get(action) or {}
        return labels.get(lang) or labels.get("en") or action.replace("_", " ")

    def all_names(self, resident: str) -> tuple[str, ...]:
        """Every name ``resident`` goes by (its id first), for matching a focus."""
        return tuple(dict.fromkeys((resident, *(self.names.get(resident) or {}).values())))


def load_registry(reader: Reader, world: str) -> Registry:
    """The registry of ``world`` (empty when the game registered nothing)."""
    found = reader.registry(world)
    return Registry(names=found["residents"], actions=found["actions"])


def load_root_texts(reader: Reader, world: str, lang: str) -> tuple[tuple[str, str], ...]:
    """``(prefix, display text)`` of ``world``'s declared roots in ``lang`` (else English),
    in prefix order; roots declared without text in either are left out."""
    _, schema = reader.schema(world)
    if schema is None:
        return ()
    texts = ((d.prefix, d.text.get(lang) or d.text.get("en")) for d in schema.roots)
    return tuple(sorted((p, t) for p, t in texts if t))
