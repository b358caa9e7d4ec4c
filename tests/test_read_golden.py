"""Golden narratives, one per language: the crowded town of ``tools.crowded_town`` with a
focus, byte for byte. Regenerate with ``CREDENCE_REGOLD=1`` after a deliberate change to
wording or ranking, and say why in the commit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sidecar.engine import parse_event
from sidecar.read import Focus, project
from sidecar.store import Reader, ResultStatus, Writer
from tools.crowded_town import WORLD, events

GOLDENS = Path(__file__).parent / "goldens"
CASES = [
    ("en", 2000, Focus()),
    ("en", 600, Focus(people=("bo",), places=("well",))),
    ("zh-Hant", 2000, Focus()),
    ("zh-Hant", 300, Focus(people=("kai",), topics=("festival",))),
]


@pytest.fixture(scope="module")
def town(tmp_path_factory: pytest.TempPathFactory) -> Reader:
    path = tmp_path_factory.mktemp("golden") / "g.db"
    writer = Writer(path, synchronous="OFF")
    try:
        results = writer.apply([(WORLD, parse_event(e)) for e in events()])
        assert all(r.status is ResultStatus.APPLIED for r in results)
    finally:
        writer.close()
    return Reader(path)


def _name(lang: str, budget: int, focus: Focus) -> str:
    terms = "-".join((*focus.people, *focus.places, *focus.topics)) or "nofocus"
    return f"crowded.{lang}.{budget}.{terms}.txt"


@pytest.mark.parametrize(("lang", "budget", "focus"), CASES, ids=[_name(*c) for c in CASES])
def test_narrative_matches_its_golden(town: Reader, lang: str, budget: int, focus: Focus) -> None:
    """The projection of a fixed world is the same text, byte for byte, in each language."""
    text = project(town, WORLD, "mira", budget=budget, lang=lang, focus=focus).text
    golden = GOLDENS / _name(lang, budget, focus)
    if os.environ.get("CREDENCE_REGOLD"):
        golden.write_text(text + "\n", encoding="utf-8")
    assert len(text) <= budget
    assert text + "\n" == golden.read_text(encoding="utf-8")
