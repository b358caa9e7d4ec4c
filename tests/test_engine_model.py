"""The engine's fast builders make the same values as the dataclass constructors.

``evolve`` (a copy with some fields changed) and ``positional`` (every field in declaration
order) exist for speed only (issue 20): they must give values equal, field for field, to
``dataclasses.replace`` and the keyword constructor, and refuse what those refuse.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields

import pytest

from sidecar.engine.model import (
    Belief,
    Change,
    ChangeKind,
    Claim,
    Evidence,
    InvalidEvidence,
    SourceKind,
    State,
    evolve,
    positional,
)


def _belief(**changes: object) -> Belief:
    base: dict[str, object] = dict(
        resident="kai", root="well", value="dry", subject="the well is dry", confidence=50,
        state=State.INFLUENCING, source_kind=SourceKind.HEARSAY, source_resident_id="bo",
        formed_day=1.0, updated_day=2.0, last_evidence_day=2.0, evidence_refs=("e1", "e2"), evidence_count=2,
        heard_from=("bo",), next_decay_day=9.0, importance=0.5,
    )  # fmt: skip
    base.update(changes)
    return Belief(**base)  # type: ignore[arg-type]


def _field_values(obj: object) -> tuple[object, ...]:
    return tuple(getattr(obj, f.name) for f in fields(obj))  # type: ignore[arg-type]


def test_evolve_equals_replace_field_for_field() -> None:
    """A copy with changes equals dataclasses.replace's, every field included."""
    b = _belief()
    changes = {
        "confidence": 58, "evidence_refs": ("e1", "e2", "e3"), "evidence_count": 3,
        "next_decay_day": None,
    }  # fmt: skip
    ours, theirs = evolve(b, **changes), dataclasses.replace(b, **changes)  # type: ignore[arg-type]
    assert ours == theirs and _field_values(ours) == _field_values(theirs)
    assert evolve(b) == b and evolve(b) is not b


def test_evolve_runs_the_class_check_and_refuses_unknown_fields() -> None:
    """A copy is as checked as a constructed value; a misspelt field is a TypeError."""
    with pytest.raises(ValueError, match=r"outside 0\.\.100"):
        evolve(_belief(), confidence=101)
    with pytest.raises(ValueError, match="hearsay beliefs"):
        evolve(_belief(), source_resident_id=None)
    ev = Evidence(
        evidence_id="e/kai", resident="kai", event_id="e", day=1.0,
        source_kind=SourceKind.FIRSTHAND, claim=Claim(root="well", value="dry"), subject="dry",
    )  # fmt: skip
    with pytest.raises(InvalidEvidence):
        evolve(ev, source_kind=SourceKind.HEARSAY)  # hearsay must name its source
    with pytest.raises(TypeError, match="no field 'confidance'"):
        evolve(_belief(), confidance=3)


def test_evolve_copies_a_class_of_one_field() -> None:
    """One field: attrgetter gives a value, not a tuple; the copy is still right."""

    @dataclass(frozen=True, slots=True)
    class One:
        x: int

    assert evolve(One(1), x=2) == One(2) and evolve(One(1)) == One(1)


def test_positional_builds_what_the_keyword_constructor_builds() -> None:
    """Every field in declaration order: equal to the keyword call, checks included."""
    names = tuple(f.name for f in fields(Belief))
    build = positional(Belief, names)
    b = _belief(interpretation="odd", people=("bo",), origins=("o",), remembered_day=3.0)
    assert build(*_field_values(b)) == b
    values = list(_field_values(b))
    values[names.index("confidence")] = 101
    with pytest.raises(ValueError, match=r"outside 0\.\.100"):
        build(*values)
    with pytest.raises(TypeError):  # one value short (a missing argument)
        build(*_field_values(b)[:-1])
    change = positional(Change, tuple(f.name for f in fields(Change)))
    c = Change(
        resident="kai", root="well", kind=ChangeKind.FORMED, confidence_before=None,
        confidence_after=50, state_before=None, state_after=State.INFLUENCING,
        value_before=None, value_after="dry", source_kind=SourceKind.FIRSTHAND,
        source_resident_id=None, event_id="e", day=1.0,
    )  # fmt: skip
    assert change(*_field_values(c)) == c


def test_positional_refuses_names_out_of_declaration_order() -> None:
    """A builder whose names are not the class's fields in order is refused when made."""
    names = tuple(f.name for f in fields(Belief))
    with pytest.raises(TypeError, match="Belief's fields are"):
        positional(Belief, (names[1], names[0], *names[2:]))
    with pytest.raises(TypeError):
        positional(Belief, names[:-1])


def test_claim_from_checked_parts_equals_a_constructed_claim() -> None:
    """A derived root around a checked value: the same claim, hashed and compared alike."""
    made = Claim.checked_parts("believes:bo:well", True)
    assert made == Claim(root="believes:bo:well", value=True)
    assert hash(made) == hash(Claim(root="believes:bo:well", value=True))


def test_built_values_are_frozen_instances_of_their_class() -> None:
    """A value filled in a draft is the frozen class itself: same type, same refusals."""
    names = tuple(f.name for f in fields(Belief))
    b = positional(Belief, names)(*_field_values(_belief()))
    copy = evolve(b, confidence=60)
    for value in (b, copy):
        assert type(value) is Belief
        with pytest.raises(dataclasses.FrozenInstanceError):
            value.confidence = 1  # type: ignore[misc]
    assert hash(copy) == hash(dataclasses.replace(b, confidence=60))


def test_a_class_without_a_draft_is_built_through_its_slots() -> None:
    """A layout a draft cannot share (here a weakref slot) takes the descriptor path."""

    @dataclass(frozen=True, slots=True, weakref_slot=True)
    class Weak:
        x: int
        y: str = "y"

        def __post_init__(self) -> None:
            if self.x < 0:
                raise ValueError("negative")

    build = positional(Weak, ("x", "y"))
    assert build(1, "a") == Weak(1, "a") and type(build(1, "a")) is Weak
    assert evolve(Weak(1), y="b") == Weak(1, "b")
    with pytest.raises(ValueError, match="negative"):
        evolve(Weak(1), x=-1)
    with pytest.raises(TypeError, match="no field 'z'"):
        evolve(Weak(1), z=2)


def test_an_outcome_starts_as_the_constructor_makes_it() -> None:
    """The fold's own Outcome builder sets every field (an unset slot fails the compare)."""
    from sidecar.engine import parse_event
    from sidecar.engine.world import Outcome, _new_outcome

    event = parse_event({"kind": "tick", "event_id": "t", "day": 3})
    built, made = _new_outcome(event, 3.0), Outcome(event=event, day=3.0)
    assert built == made
    assert [getattr(built, f.name) for f in fields(Outcome)] == [
        getattr(made, f.name) for f in fields(Outcome)
    ]
