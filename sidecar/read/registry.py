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

from collections.abc import Callable, Iterator, Mapping

from ..store import Reader

__all__ = ["Names", "Registry", "load_registry", "load_root_texts"]

#: Looks up one resident's registered names (``{lang: name}``; None or empty: none).
Lookup = Callable[[str], "Mapping[str, str] | None"]


class Registry:
    """Display names of residents and labels of actions, per language.

    A resident's names are read when first asked (``lookup``, one primary-key read) and kept
    for the rest of the read: a world may register tens of thousands of residents and a read
    names the few it shows, so what it costs follows what it shows. ``names`` given up front
    are known without a lookup (tests, and whatever was read already)."""

    __slots__ = ("_known", "_lookup", "actions")

    def __init__(
        self,
        names: Mapping[str, Mapping[str, str]] | None = None,
        actions: Mapping[str, Mapping[str, str]] | None = None,
        lookup: Lookup | None = None,
    ) -> None:
        self._known: dict[str, Mapping[str, str]] = dict(names or {})
        self._lookup = lookup
        self.actions: Mapping[str, Mapping[str, str]] = dict(actions or {})

    def names_of(self, resident: str) -> Mapping[str, str]:
        """``resident``'s registered names by language (empty when it has none)."""
        found = self._known.get(resident)
        if found is None:
            found = (self._lookup(resident) if self._lookup is not None else None) or {}
            self._known[resident] = found
        return found

    def registered(self, resident: str) -> bool:
        """Whether the game registered a name for ``resident``."""
        return bool(self.names_of(resident))

    def name(self, resident: str, lang: str) -> str:
        """``resident``'s display name in ``lang`` (else English, else the id)."""
        names = self.names_of(resident)
        return names.get(lang) or names.get("en") or resident

    def action(self, action: str, lang: str) -> str:
        """The label of ``action`` in ``lang`` (else English, else the id, ``_`` as spaces)."""
        labels = self.actions.get(action) or {}
        return labels.get(lang) or labels.get("en") or action.replace("_", " ")

    def all_names(self, resident: str) -> tuple[str, ...]:
        """Every name ``resident`` goes by (its id first), for matching a focus."""
        return tuple(dict.fromkeys((resident, *self.names_of(resident).values())))

    def __repr__(self) -> str:
        return f"Registry(known={self._known!r}, actions={self.actions!r})"


class Names(Mapping[str, str]):
    """Residents' display names in one language, for the wording (:attr:`.wording.Words.names`):
    each looked up in the :class:`Registry` when first read, ``resident`` itself named
    ``self_name``. A resident without a registered name is not a key (its id stands in).
    Iterating lists the names read so far, not the world's."""

    __slots__ = ("_lang", "_registry", "_resident", "_self_name")

    def __init__(self, registry: Registry, lang: str, resident: str, self_name: str) -> None:
        self._registry, self._lang = registry, lang
        self._resident, self._self_name = resident, self_name

    def __getitem__(self, resident: str) -> str:
        if resident == self._resident:
            return self._self_name
        if not self._registry.registered(resident):
            raise KeyError(resident)
        return self._registry.name(resident, self._lang)

    def __iter__(self) -> Iterator[str]:
        known = [r for r, names in self._registry._known.items() if names]
        return iter(dict.fromkeys([*known, self._resident]))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def load_registry(reader: Reader, world: str) -> Registry:
    """The registry of ``world``: its action labels, and its residents' names as asked."""
    return Registry(actions=reader.action_labels(world), lookup=lambda r: reader.names_of(world, r))


def load_root_texts(reader: Reader, world: str, lang: str) -> tuple[tuple[str, str], ...]:
    """``(prefix, display text)`` of ``world``'s declared roots in ``lang`` (else English),
    in prefix order; roots declared without text in either are left out."""
    _, schema = reader.schema(world)
    if schema is None:
        return ()
    texts = ((d.prefix, d.text.get(lang) or d.text.get("en")) for d in schema.roots)
    return tuple(sorted((p, t) for p, t in texts if t))
