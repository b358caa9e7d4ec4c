"""The design document's examples, as a contract run against both implementations.

The same scenario runs through the in-memory fold (:class:`sidecar.engine.MemoryWorld`) and
through the SQLite :class:`sidecar.store.Writer` (read back with a :class:`Reader`); both
must tell the same story.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from belief_builders import act, intervene, observe, say, tick

from sidecar.engine import (
    Belief,
    Change,
    ChangeKind,
    InvalidEvent,
    MemoryWorld,
    SourceKind,
    State,
    parse_event,
)
from sidecar.store import Reader, Writer

WORLD = "town"


class World(Protocol):
    """What a scenario needs from an implementation."""

    def send(self, event: dict[str, Any]) -> str: ...  # 'applied' | 'duplicate' | 'rejected'
    def belief(self, resident: str, root: str) -> Belief | None: ...
    def beliefs(self) -> list[Belief]: ...
    def history(self, resident: str, root: str) -> list[Change]: ...
    def log(self) -> list[tuple[str, str]]: ...  # (event_id, kind) in order


class Memory:
    def __init__(self) -> None:
        self.world = MemoryWorld()
        self._log: list[tuple[str, str]] = []

    def send(self, event: dict[str, Any]) -> str:
        parsed = parse_event(event)
        try:
            out = self.world.apply(parsed)
        except InvalidEvent:
            return "rejected"
        if out is None:
            return "duplicate"
        self._log.append((parsed.event_id, str(parsed.kind)))
        return "applied"

    def belief(self, resident: str, root: str) -> Belief | None:
        return self.world.get_belief(resident, root)

    def beliefs(self) -> list[Belief]:
        return sorted(self.world.beliefs.values(), key=lambda b: (b.resident, b.root))

    def history(self, resident: str, root: str) -> list[Change]:
        return [c for c in self.world.changes if (c.resident, c.root) == (resident, root)]

    def log(self) -> list[tuple[str, str]]:
        return list(self._log)


class Sqlite:
    def __init__(self, path: Path) -> None:
        self.writer = Writer(path, synchronous="OFF")
        self.reader = Reader(path)

    def close(self) -> None:
        self.reader.close()
        self.writer.close()

    def send(self, event: dict[str, Any]) -> str:
        [result] = self.writer.apply([(WORLD, parse_event(event))])
        return str(result.status)

    def belief(self, resident: str, root: str) -> Belief | None:
        return self.reader.belief(WORLD, resident, root)

    def beliefs(self) -> list[Belief]:
        return self.reader.all_beliefs(WORLD)

    def history(self, resident: str, root: str) -> list[Change]:
        return self.reader.history(WORLD, resident, root)

    def log(self) -> list[tuple[str, str]]:
        rows = self.reader.conn.execute(
            "SELECT event_id, kind FROM events WHERE world = ? ORDER BY seq", (WORLD,)
        ).fetchall()
        return [(r[0], r[1]) for r in rows]


@pytest.fixture(params=["memory", "sqlite"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    if request.param == "memory":
        yield Memory()
    else:
        impl = Sqlite(tmp_path / "scenario.db")
        yield impl
        impl.close()


def test_a_tells_b_that_c_stole_my_item(world: World) -> None:
    """A tells B "C stole my item": B holds hearsay at 58 sourced to A; the log holds only a say."""
    assert (
        world.send(say(1, "ana", ["ben"], "theft:ana:item", "cai", "Cai stole my item", eid="s1"))
        == "applied"
    )
    belief = world.belief("ben", "theft:ana:item")
    assert belief is not None
    assert (belief.value, belief.subject) == ("cai", "Cai stole my item")
    assert (belief.confidence, belief.state) == (58, State.INFLUENCING)
    assert belief.source_kind is SourceKind.HEARSAY  # not firsthand: Ben saw nothing
    assert belief.source_resident_id == "ana"
    # The world only knows that it was said: no theft happened in the log, nobody saw one.
    assert world.log() == [("s1", "say")]
    assert world.belief("ana", "theft:ana:item") is None
    assert world.belief("cai", "theft:ana:item") is None
    # Ben's only other belief is what he saw for himself: that Ana claimed it.
    assert [(b.resident, b.root) for b in world.beliefs()] == [
        ("ben", "believes:ana:theft:ana:item"),
        ("ben", "theft:ana:item"),
    ]
    claimed = world.belief("ben", "believes:ana:theft:ana:item")
    assert claimed is not None and claimed.value == "cai"
    assert claimed.source_kind is SourceKind.FIRSTHAND and claimed.source_resident_id is None


def test_three_sightings_of_the_key_on_the_cafe_counter(world: World) -> None:
    """Three separate observations of the key on the café counter: one belief, 78 -> 86 -> 94."""
    for day in (1, 2, 3):
        world.send(observe(day, ["mira"], "key:cafe", "counter", "the key is on the café counter"))
    assert len([b for b in world.beliefs() if b.root == "key:cafe"]) == 1
    belief = world.belief("mira", "key:cafe")
    assert belief is not None and belief.confidence == 94
    assert len(belief.evidence_refs) == 3 and len(set(belief.evidence_refs)) == 3
    history = world.history("mira", "key:cafe")
    assert [(c.kind, c.confidence_after) for c in history] == [
        (ChangeKind.FORMED, 78),
        (ChangeKind.REINFORCED, 86),
        (ChangeKind.REINFORCED, 94),
    ]


def test_door_open_then_seen_closed_twice(world: World) -> None:
    """'Door open', then firsthand 'not open' twice: doubted to 58, then corrected to 72."""
    world.send(observe(1, ["mira"], "door:cellar", True, "the cellar door is open"))
    world.send(observe(2, ["mira"], "door:cellar", False, "the cellar door is shut"))
    doubted = world.belief("mira", "door:cellar")
    assert doubted is not None
    assert (doubted.value, doubted.confidence, doubted.state) == (True, 58, State.DOUBTFUL)
    world.send(observe(3, ["mira"], "door:cellar", False, "the cellar door is shut"))
    corrected = world.belief("mira", "door:cellar")
    assert corrected is not None
    assert (corrected.value, corrected.confidence, corrected.state) == (False, 72, State.CORRECTED)
    assert corrected.subject == "the cellar door is shut"
    history = world.history("mira", "door:cellar")
    assert [(c.kind, c.value_before, c.value_after) for c in history] == [
        (ChangeKind.FORMED, None, True),
        (ChangeKind.DOUBTED, True, True),
        (ChangeKind.CORRECTED, True, False),
    ]


def test_the_poisoned_well_story(world: World) -> None:
    """The README demo: rumour 58, repeated 66, doubted 46, corrected 72 by Mira's own bucket."""
    world.send(say(1, "bo", ["mira", "kai"], "water:well", "poisoned", "the well is poisoned"))
    world.send(say(2, "tom", ["mira"], "water:well", "poisoned", "the well is poisoned"))
    world.send(observe(3, ["mira"], "water:well", "clean", "the doctor drank, unharmed"))
    world.send(observe(4, ["mira"], "water:well", "clean", "the water is clear and sweet"))
    history = world.history("mira", "water:well")
    assert [(c.kind, c.confidence_before, c.confidence_after) for c in history] == [
        (ChangeKind.FORMED, None, 58),
        (ChangeKind.REINFORCED, 58, 66),
        (ChangeKind.DOUBTED, 66, 46),
        (ChangeKind.CORRECTED, 46, 72),
    ]
    kai = world.belief("kai", "water:well")
    assert kai is not None and (kai.value, kai.confidence) == ("poisoned", 58)


def test_an_unconfirmed_rumour_fades_after_three_weeks(world: World) -> None:
    """Nobody repeats Bo's rumour: three weeks later it has faded to 34 and is past."""
    world.send(say(0, "bo", ["mira"], "water:well", "poisoned"))
    world.send(tick(21))
    belief = world.belief("mira", "water:well")
    assert belief is not None and (belief.confidence, belief.state) == (34, State.PAST)
    kinds = [c.kind for c in world.history("mira", "water:well")]
    assert kinds == [ChangeKind.FORMED, ChangeKind.DECAYED, ChangeKind.DECAYED, ChangeKind.FADED]


def test_a_player_implant_is_noticed_then_disproved(world: World) -> None:
    """Implant 65; a contradicting rumour is an anomaly (35); seeing for oneself corrects (72)."""
    world.send(intervene(1, "mira", "implant", "water:well", "poisoned", "the well is poisoned"))
    world.send(say(2, "kai", ["mira"], "water:well", "clean"))
    world.send(observe(3, ["mira"], "water:well", "clean"))
    history = world.history("mira", "water:well")
    assert [(c.kind, c.confidence_after, c.state_after) for c in history] == [
        (ChangeKind.FORMED, 65, State.INFLUENCING),
        (ChangeKind.ANOMALY, 35, State.ANOMALOUS),
        (ChangeKind.CORRECTED, 72, State.CORRECTED),
    ]
    belief = world.belief("mira", "water:well")
    assert belief is not None and belief.intervention is None


def test_a_refused_action_is_never_recorded_as_completed(world: World) -> None:
    """Kai's rejected attempt to open the door is believed as rejected by Kai and the witness."""
    assert world.send(act(1, "kai", "open_door", "rejected", ["mira"])) == "applied"
    for who in ("kai", "mira"):
        belief = world.belief(who, "action:kai:open_door")
        assert belief is not None and belief.value == "rejected"


def test_duplicates_and_refusals_are_the_same_in_both(world: World) -> None:
    """A resent id is a duplicate; a suppress with no belief is rejected; neither leaves a trace."""
    assert world.send(observe(1, ["mira"], "r", 1, eid="e1")) == "applied"
    assert world.send(observe(2, ["mira"], "r", 1, eid="e1")) == "duplicate"
    assert world.send(intervene(3, "kai", "suppress", "r", eid="e2")) == "rejected"
    assert world.log() == [("e1", "observe")]
    belief = world.belief("mira", "r")
    assert belief is not None and belief.confidence == 78
    assert world.belief("kai", "r") is None
