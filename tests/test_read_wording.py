"""Self-reference in the narrative's wording (SPEC §7.12): which subjects read as "I"/我."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sidecar.read.wording import EN, ZH_HANT

# Mira's own names, longest first, as the narrative gives them (id and registered names).
SELF = ("mira", "Mira", "米拉")


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("Mira drew a bucket", "I drew a bucket"),
        ("MIRA drew a bucket", "I drew a bucket"),
        ("Mira's bucket", "my bucket"),
        ("米拉 drew a bucket", "I drew a bucket"),  # a zh-Hant name followed by a space
        ("米拉的繩子", "米拉的繩子"),  # no space: an English narrative leaves it
        ("Miranda drew", "Miranda drew"),
        ("the miller is angry with Mira", "the miller is angry with me"),
        ("Kai took Mira's rope", "Kai took my rope"),
    ],
)
def test_english_self_reference(subject: str, expected: str) -> None:
    """In English a self-name (any language, any case) followed by a space or 's is I/my."""
    assert replace(EN, self_names=SELF).first_person(subject) == expected


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("米拉的繩子", "我的繩子"),
        ("Mira's bucket", "我的bucket"),  # not "我's bucket"
        ("Mira drew a bucket", "我drew a bucket"),  # an English subject: never her own name
        ("磨坊主人在生米拉的氣", "磨坊主人在生我的氣"),  # inside the subject too
    ],
)
def test_zh_hant_self_reference(subject: str, expected: str) -> None:
    """In zh-Hant a self-name is 我 wherever it stands; "'s " is 我的."""
    assert replace(ZH_HANT, self_names=SELF).first_person(subject) == expected


@pytest.mark.parametrize(
    ("day", "today", "en", "zh"),
    [
        (24, 30, "on day 24", "第24天"),
        (24.25, 30, "on day 24 at 06:00", "第24天06:00"),
        (29.5, 30, "yesterday at 12:00", "昨天12:00"),
        (30, 30, "today", "今天"),
    ],
)
def test_days_are_whole_or_a_time_of_day(day: float, today: float, en: str, zh: str) -> None:
    """A day phrase never shows a fraction of a day: it reads as a time of day instead."""
    assert EN.when(day, today) == en
    assert ZH_HANT.when(day, today) == zh


def test_zh_hant_splits_a_one_character_verb_from_its_object() -> None:
    """「打水」 is 打 + 水, so counts go between (「打了25次水」); other labels stay whole."""
    assert ZH_HANT.split("打水") == ("打", "水")
    assert ZH_HANT.split("修籬笆") == ("修", "籬笆")
    assert ZH_HANT.split("休息") is None
    assert ZH_HANT.split("打") is None
    assert EN.split("fetch water") is None


def test_a_cut_never_falls_inside_a_word() -> None:
    """clip_text cuts at a space, with an ellipsis; text without spaces between characters."""
    from sidecar.read.phrasing import clip_text

    assert clip_text("the well water is poisoned", 14) == "the well…"
    assert clip_text("井水有毒而且很臭", 5) == "井水有毒…"
    assert clip_text("short", 14) == "short"
