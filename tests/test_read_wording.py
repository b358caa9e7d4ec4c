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
        ("Mira drew a bucket", "Mira drew a bucket"),  # followed by a space: left alone
    ],
)
def test_zh_hant_self_reference(subject: str, expected: str) -> None:
    """In zh-Hant a self-name followed by anything but a space is 我; "'s " is 我的."""
    assert replace(ZH_HANT, self_names=SELF).first_person(subject) == expected
