"""Promises and goals in the engine: every lifecycle transition, learned per party from
evidence only, the trust moves, the goal ops and every refusal (sidecar/engine/promises.py)."""

from __future__ import annotations

from typing import Any

import pytest

from sidecar.engine import ContractViolation, InvalidEvent, MemoryWorld, parse_event
from sidecar.engine.promises import (
    PROMISE_TRANSITIONS,
    GoalState,
    PromiseState,
)
from sidecar.engine.rules import TRANSITIONS, Rules


def promise(
    day: float = 1, by: float | None = 12, to: tuple[str, ...] = ("kai",), **kw: Any
) -> dict[str, Any]:
    out = {"event_id": kw.pop("eid", "p1"), "day": day, "kind": "promise", "promise": "fence",
           "promiser": "bo", "to": list(to), "action": "mend_fence", "subject": "mend the fence"}  # fmt: skip
    if by is not None:
        out["by"] = by
    return out | kw


def act(day: float, witnesses: tuple[str, ...] = (), status: str = "completed", eid: str = "a1",
        actor: str = "bo", action: str = "mend_fence") -> dict[str, Any]:  # fmt: skip
    return {"event_id": eid, "day": day, "kind": "act", "actor": actor, "action": action,
            "status": status, "witnesses": list(witnesses)}  # fmt: skip


def report(
    day: float, value: str, speaker: str = "lena", to: str = "kai", eid: str = "s1"
) -> dict[str, Any]:
    return {"event_id": eid, "day": day, "kind": "say", "speaker": speaker, "listeners": [to],
            "claim": {"root": "promise:fence", "value": value}, "subject": f"Bo's promise was {value}"}  # fmt: skip


def tick(day: float, eid: str = "t1") -> dict[str, Any]:
    return {"event_id": eid, "day": day, "kind": "tick"}


def goal(
    day: float, op: str, subject: str | None = None, eid: str = "g1", g: str = "well"
) -> dict[str, Any]:
    out = {"event_id": eid, "day": day, "kind": "goal", "resident": "mira", "goal": g, "op": op}
    return out | ({"subject": subject} if subject else {})


def run(*events: dict[str, Any], rules: Rules | None = None) -> MemoryWorld:
    world = MemoryWorld(rules or Rules())
    for e in events:
        world.apply(parse_event(e))
    return world


def state(world: MemoryWorld, resident: str) -> PromiseState:
    return world.views[(resident, "fence")].state


def trust(world: MemoryWorld, resident: str = "kai") -> float | None:
    return world.trust.get((resident, "bo", ""))


def promise_changes(world: MemoryWorld, resident: str) -> list[tuple[Any, ...]]:
    return [
        (c.value_before, c.value_after, c.detail, c.source_resident_id)
        for c in world.changes
        if c.resident == resident and c.root == "promise:fence" and str(c.kind) == "promise"
    ]


def test_a_promise_gives_every_party_a_pending_view_and_no_belief() -> None:
    """The promiser and each promisee hold a pending view; no belief, no trust move."""
    w = run(promise(to=("kai", "lena")))
    assert {r: state(w, r) for r in ("bo", "kai", "lena")} == dict.fromkeys(
        ("bo", "kai", "lena"), PromiseState.PENDING
    )
    assert w.beliefs == {} and w.trust == {}
    assert promise_changes(w, "kai") == [(None, "pending", "made", None)]


def test_seeing_the_act_keeps_it_for_the_witnesses_only() -> None:
    """pending → kept (seen) for the actor and the act's witnesses; others stay pending."""
    w = run(promise(to=("kai", "lena")), act(5, witnesses=("kai",)))
    assert state(w, "kai") is PromiseState.KEPT and state(w, "bo") is PromiseState.KEPT
    assert state(w, "lena") is PromiseState.PENDING
    assert promise_changes(w, "kai")[-1] == ("pending", "kept", "seen", None)
    assert trust(w) == pytest.approx(0.65)  # + promise_kept_step
    assert trust(w, "lena") is None


@pytest.mark.parametrize("status", ["rejected", "interrupted", "replaced"])
def test_an_act_that_did_not_complete_keeps_nothing(status: str) -> None:
    """Only a completed act of the promised action by the promiser keeps it."""
    w = run(promise(), act(5, witnesses=("kai",), status=status))
    assert state(w, "kai") is PromiseState.PENDING


def test_another_actor_or_action_keeps_nothing() -> None:
    """Lena mending the fence, or Bo doing something else, is not Bo keeping his word."""
    w = run(
        promise(),
        act(5, ("kai",), actor="lena", eid="a1"),
        act(6, ("kai",), action="dig", eid="a2"),
    )
    assert state(w, "kai") is PromiseState.PENDING


def test_the_deadline_passing_unseen_makes_it_overdue_on_the_deadline() -> None:
    """An event dated after `by` makes a pending view overdue (day = the deadline) and costs
    the promisee's trust; kept on day `by` is on time."""
    on_time = run(promise(), act(12, witnesses=("kai",)), tick(13))
    assert state(on_time, "kai") is PromiseState.KEPT
    w = run(promise(), tick(12, eid="t0"), tick(13))
    assert state(w, "kai") is PromiseState.OVERDUE and state(w, "bo") is PromiseState.OVERDUE
    overdue = [c for c in w.changes if c.resident == "kai" and c.value_after == "overdue"]
    assert overdue[0].day == 12.0 and overdue[0].detail == "deadline"
    assert trust(w) == pytest.approx(0.45)


def test_kept_but_unseen_is_overdue_for_whoever_did_not_see_it() -> None:
    """Never assumed from the world's truth: Bo mended it, Kai did not see it: overdue."""
    w = run(promise(), act(5), tick(13))
    assert state(w, "bo") is PromiseState.KEPT and state(w, "kai") is PromiseState.OVERDUE


def test_no_deadline_is_never_overdue() -> None:
    """A promise without `by` stays pending however far the clock moves."""
    w = run(promise(by=None), tick(1e6))
    assert state(w, "kai") is PromiseState.PENDING


def test_overdue_then_seen_is_kept_late() -> None:
    """overdue → kept when the party sees it done late; trust rises again by the kept step."""
    w = run(promise(), tick(13), act(14, ("kai",)))
    assert state(w, "kai") is PromiseState.KEPT
    assert trust(w) == pytest.approx(0.5)


def test_told_kept_and_told_broken() -> None:
    """pending → kept (told) or broken (told), naming the teller; trust moves once."""
    kept = run(promise(), report(3, "kept"))
    assert promise_changes(kept, "kai")[-1] == ("pending", "kept", "told", "lena")
    assert trust(kept) == pytest.approx(0.65)
    broken = run(promise(), report(3, "broken"))
    assert state(broken, "kai") is PromiseState.BROKEN and trust(broken) == pytest.approx(0.45)


def test_overdue_then_told_broken_counts_the_breach_once() -> None:
    """overdue → broken (told) moves no trust: the deadline already counted it."""
    w = run(promise(), tick(13), report(14, "broken"))
    assert state(w, "kai") is PromiseState.BROKEN and trust(w) == pytest.approx(0.45)


def test_overdue_then_told_kept() -> None:
    """overdue → kept (told)."""
    w = run(promise(), tick(13), report(14, "kept"))
    assert state(w, "kai") is PromiseState.KEPT


def test_a_report_never_overturns_what_a_party_learned_but_seeing_does() -> None:
    """broken (told) stays broken when told kept; kept stays kept when told broken; broken
    (told) becomes kept when the party sees the act."""
    w = run(promise(), report(3, "broken"), report(4, "kept", speaker="mira", eid="s2"))
    assert state(w, "kai") is PromiseState.BROKEN
    w = run(promise(), act(3, ("kai",)), report(4, "broken"))
    assert state(w, "kai") is PromiseState.KEPT
    w = run(promise(), report(3, "broken"), act(4, ("kai",)))
    assert state(w, "kai") is PromiseState.KEPT and trust(w) == pytest.approx(0.5)


def test_a_report_reaches_only_parties_and_still_forms_a_belief() -> None:
    """A non-party hears a report: a hearsay belief, no view; a report about an unknown
    promise is a belief only."""
    w = run(promise(), report(3, "kept", to="mira"))
    assert ("mira", "fence") not in w.views
    assert ("mira", "promise:fence") in w.beliefs
    w = run(report(3, "kept"))
    assert w.views == {} and ("kai", "promise:fence") in w.beliefs


def test_the_promiser_never_moves_its_trust_in_itself() -> None:
    """The promiser's own view moves (it did or did not do it) but no trust row."""
    w = run(promise(), tick(13))
    assert ("bo", "bo", "") not in w.trust


def test_the_steps_are_rules() -> None:
    """promise_kept_step and promise_broken_step come from the world's rules."""
    w = run(promise(), act(5, ("kai",)), rules=Rules(promise_kept_step=0.2))
    assert trust(w) == pytest.approx(0.8)
    w = run(promise(), tick(13), rules=Rules(promise_broken_step=0.0))
    assert trust(w) == pytest.approx(0.6)


def test_the_lifecycle_table_is_the_one_the_rules_name() -> None:
    """Every (state, evidence) pair in the table, and nothing leaves kept."""
    assert not any(before is PromiseState.KEPT for before, _ in PROMISE_TRANSITIONS)
    assert PROMISE_TRANSITIONS[(PromiseState.PENDING, "deadline")] is PromiseState.OVERDUE
    assert (PromiseState.BROKEN, "told kept") not in PROMISE_TRANSITIONS
    kinds = {str(k) for k in TRANSITIONS}
    assert {"promise", "goal"} <= kinds


def test_goal_lifecycle_keeps_its_history() -> None:
    """set → changed → achieved → set again: each a goal change with the text before and
    after; the changed-from text is kept while active."""
    w = run(
        goal(1, "set", "win back Lena's trust"),
        goal(2, "changed", "leave town before winter", eid="g2"),
        goal(3, "achieved", eid="g3"),
        goal(4, "set", "find a new home", eid="g4"),
        goal(5, "abandoned", eid="g5"),
    )
    history = [(c.value_before, c.value_after, c.detail, c.subject_before, c.subject_after)
               for c in w.changes if c.root == "goal:well"]  # fmt: skip
    assert history == [
        (None, "active", "set", None, "win back Lena's trust"),
        ("active", "active", "changed", "win back Lena's trust", "leave town before winter"),
        ("active", "achieved", "achieved", "leave town before winter", "leave town before winter"),
        ("achieved", "active", "set", "leave town before winter", "find a new home"),
        ("active", "abandoned", "abandoned", "find a new home", "find a new home"),
    ]
    g = w.goals[("mira", "well")]
    assert g.state is GoalState.ABANDONED and g.set_day == 4.0 and g.prev_subject is None


@pytest.mark.parametrize(
    "events",
    [
        [goal(1, "achieved")],
        [goal(1, "changed", "x")],
        [goal(1, "set", "x"), goal(2, "set", "y", eid="g2")],
        [goal(1, "set", "x"), goal(2, "abandoned", eid="g2"), goal(3, "achieved", eid="g3")],
    ],
    ids=["achieve-none", "change-none", "set-active", "achieve-abandoned"],
)
def test_a_goal_op_that_does_not_fit_is_refused(events: list[dict[str, Any]]) -> None:
    """Any op the goal table has no row for is invalid_event, nothing of it applied."""
    world = MemoryWorld()
    for e in events[:-1]:
        world.apply(parse_event(e))
    before = list(world.changes)
    with pytest.raises(InvalidEvent, match="goal 'well'"):
        world.apply(parse_event(events[-1]))
    assert world.changes == before


@pytest.mark.parametrize("op", ["achieved", "abandoned", "changed"])
def test_a_late_goal_change_dated_before_the_goal_was_set_is_refused(
    tmp_path: Any, op: str
) -> None:
    """With late events allowed, a change of a goal dated before the goal was set (which the
    goals table's CHECK day >= set_day would refuse as a storage failure, internal_error) is
    invalid_event, nothing applied; in the writer too, and a change on the set day applies."""
    from sidecar.store import ResultStatus, Writer

    late = Rules(late_event_days=10)
    world = run(goal(5, "set", "x"), rules=late)
    before = list(world.changes)
    change = goal(4.5, op, "y" if op == "changed" else None, eid="g2")
    with pytest.raises(
        InvalidEvent, match=r"goal 'well' of 'mira': cannot be .* before it was set \(day 5\)"
    ):
        world.apply(parse_event(change))
    assert world.changes == before
    writer = Writer(tmp_path / "g.db", rules=late)
    try:
        results = writer.apply(
            [("w", parse_event(e)) for e in (goal(5, "set", "x"), change, {**change, "day": 5})]
        )
    finally:
        writer.close()
    assert [r.status for r in results] == [
        ResultStatus.APPLIED, ResultStatus.REJECTED, ResultStatus.APPLIED,
    ]  # fmt: skip
    assert getattr(results[1].error, "code", None) == "invalid_event", results[1].error


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (promise(by=0.5, day=1), "'by'"),
        (promise(by=True), "'by'"),
        (promise(to=()), "'to'"),
        (promise(to=("bo",)), "promise itself"),
        (promise(subject=""), "'subject'"),
        (promise(action=5), "'action'"),
        (goal(1, "set"), "'subject'"),
        (goal(1, "finish"), "'op'"),
    ],
)
def test_malformed_promise_and_goal_events_are_refused(event: dict[str, Any], message: str) -> None:
    """Each field is checked on parsing, naming the field."""
    with pytest.raises(InvalidEvent, match=message):
        parse_event(event)


def test_a_promise_id_is_made_once() -> None:
    """A second promise with the same id is refused."""
    world = run(promise())
    with pytest.raises(InvalidEvent, match="already made"):
        world.apply(parse_event(promise(eid="p2", day=2)))


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (report(1, "maybe"), "promise_report_value"),
        ({"event_id": "o", "day": 1, "kind": "observe", "witnesses": ["kai"],
          "claim": {"root": "promise:fence", "value": "kept"}, "subject": "s"},
         "promise_claim_outside_report"),
        ({"event_id": "i", "day": 1, "kind": "intervene", "resident": "kai", "op": "implant",
          "claim": {"root": "promise:fence", "value": "kept"}, "subject": "s"},
         "promise_claim_outside_report"),
    ],
)  # fmt: skip
def test_the_guard_refuses_promise_claims_outside_a_report(
    event: dict[str, Any], reason: str
) -> None:
    """Keeping is learned by seeing the act or by being told kept/broken, nothing else."""
    with pytest.raises(ContractViolation) as info:
        parse_event(event)
    assert info.value.reason == reason


def test_events_round_trip_through_their_canonical_form() -> None:
    """to_dict parses again to an equal event (what makes a replay exact)."""
    for raw in (promise(), promise(by=None), goal(1, "set", "x"), goal(2, "achieved")):
        event = parse_event(raw)
        assert parse_event(event.to_dict()) == event


def test_deadlines_are_checked_in_a_stable_order() -> None:
    """Many promises falling due at one event: ordered by (deadline, resident, promise)."""
    events = [
        promise(eid=f"p{i}", promise=f"f{i}", by=10 - i % 3, to=("kai", "lena")) for i in range(6)
    ]
    w = run(*events, tick(20))
    due = [(c.day, c.resident, c.root) for c in w.changes if c.value_after == "overdue"]
    assert due == sorted(due)


def test_one_act_keeps_one_promise_the_first_due() -> None:
    """Two open promises of the same action: one act keeps the one due first, for every
    party who saw it; the next act keeps the other."""
    w = run(
        promise(eid="p1", promise="late", by=20, to=("kai",)),
        promise(eid="p2", promise="fence", by=10, to=("kai", "lena")),
        act(3, witnesses=("kai", "lena")),
    )
    assert w.views[("kai", "fence")].state is PromiseState.KEPT
    assert w.views[("lena", "fence")].state is PromiseState.KEPT
    assert w.views[("kai", "late")].state is PromiseState.PENDING
    w.apply(parse_event(act(4, witnesses=("kai",), eid="a2")))
    assert w.views[("kai", "late")].state is PromiseState.KEPT
