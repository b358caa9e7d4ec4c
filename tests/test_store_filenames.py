"""World file names: one per id, never shared (also case-folded), readable, and decodable."""

from __future__ import annotations

import hashlib
from urllib.parse import quote

from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.store.filenames import (
    HASH_MARK,
    READABLE,
    NameKind,
    classify,
    decode_name,
    encode_name,
)


def old_name(world: str) -> str:
    """The earlier scheme's file name stem (kept here to build old data dirs in tests)."""
    name = quote(world, safe="-_")
    if name.startswith("."):
        name = "%2E" + name[1:]
    if len(name) > 200:
        name = "~" + hashlib.sha256(world.encode()).hexdigest()
    return name


_hashed_by_old = st.text(
    st.characters(min_codepoint=0x80, exclude_categories=("Cs",)), min_size=67, max_size=200
)
ids = st.one_of(
    st.text(min_size=1, max_size=200),
    st.text(st.sampled_from("aAbB~.-_!@%zZ"), min_size=1, max_size=200),
    st.builds(lambda t: "~" + t, st.text(max_size=199)),
    _hashed_by_old,
    st.builds(lambda t: "~" + hashlib.sha256(t.encode()).hexdigest(), _hashed_by_old),
)


@settings(max_examples=400)
@given(st.lists(ids, min_size=2, max_size=12, unique=True))
def test_no_two_ids_share_a_file_name_even_case_folded(worlds: list[str]) -> None:
    """Distinct ids (any text, `~`-prefixed, old-hashed, their hashes) never get names that
    are equal, even compared case-folded (macOS, Windows)."""
    variants = (v for w in worlds for v in (w, w.upper(), w.lower(), w.swapcase()))
    worlds = list(dict.fromkeys(variants))  # every case variant of an id is another id
    names = [encode_name(w) for w in worlds]
    assert len({n.casefold() for n in names}) == len(worlds)


@settings(max_examples=300)
@given(ids)
def test_a_name_is_short_ascii_safe_and_says_its_id(world: str) -> None:
    """Every name is plain ASCII without a leading dot or a path separator, well under 255
    bytes, and a readable one decodes back to its id (a hashed one is told apart)."""
    name = encode_name(world)
    assert name.isascii() and name.isprintable() and not name.startswith(".")
    assert "/" not in name and "\\" not in name and len(name) <= READABLE + 1
    parsed = classify(name)
    if HASH_MARK in name:
        assert parsed.kind is NameKind.HASHED
    else:
        assert (parsed.kind, parsed.world) == (NameKind.PLAIN, world)
        assert decode_name(name) == world


@settings(max_examples=300)
@given(ids)
def test_an_old_name_is_recognised_and_never_mistaken_for_another_id(world: str) -> None:
    """A name of the earlier scheme is either read as the same id by both schemes, or
    classified as old (to be renamed): it never names a different world now."""
    parsed = classify(old_name(world))
    if parsed.kind is NameKind.PLAIN:
        assert parsed.world == world
    else:
        assert parsed.kind in (NameKind.OLD, NameKind.OLD_HASHED)
        assert parsed.world in (world, None)


def test_names_stay_readable_where_they_can() -> None:
    """Common ids keep readable names; upper case is marked, device names are escaped."""
    assert encode_name("town") == "town"
    assert encode_name("Town-2") == "!town-2"
    assert encode_name("south/2") == "south%2F2"
    assert encode_name("~x") == "%7Ex"
    assert encode_name("con") == "%63on" and encode_name("NUL.save") == "!n!u!l.save"
    long = encode_name("台北" * 40)
    assert long.startswith("%E5%8F%B0") and HASH_MARK in long and len(long) <= READABLE + 1
