"""Stage 1 of the narrative: read once everything a resident's narrative draws on.

The narrative is a straight pipe — **recall** (this module, the only one that reads the
store) → classify (:mod:`.items`) → rank (:mod:`.ranking`) → word (:mod:`.phrasing`) →
pack (:mod:`.packing`) — each stage using only the outputs of the stages before it.
:func:`recall` runs a fixed handful of queries whatever the resident holds, each on an
index (pinned by ``tests/test_store_plans.py``): the resident's beliefs, the latest
correction of each corrected one and contradiction of each contested one, what each of its
acts came to (counted on an index, with only the episodes a line names read from the log),
its trust table with the change records behind it, the world's registry and root schema and
its clock. None reads every episode, correction or contradiction a long game piles up:
what is left that grows with the game is one aggregate in SQL per shown belief over its own
contradicting pieces, and one pass over the resident's range of the corrections' partial
index (its entries alone: the kind its condition implies is not checked against the row).
"""

from __future__ import annotations

import heapq
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import orjson

from ..engine import Belief, Intervention, SourceKind, State
from ..engine.model import new_belief
from ..engine.promises import GoalRecord, PromiseRecord, PromiseView
from ..engine.roots import trust_root
from ..engine.texts import encode_texts
from ..store import Reader, StoreError
from ..store.rows import load_json
from ..store.schema import TRUST_MOVES
from .queries import Contradiction, Correction, contradictions, corrections, latest_said
from .registry import Registry, load_registry, load_root_texts
from .sources import Sources, load_sources

if TYPE_CHECKING:
    from .ranking import Focus

__all__ = [
    "GOALS_RECALLED",
    "PROMISES_RECALLED",
    "ActEpisode",
    "ActHistory",
    "Bounded",
    "Cut",
    "OwnRecall",
    "PlainSubjects",
    "Recall",
    "TrustRecord",
    "act_histories",
    "act_histories_by_episode",
    "beliefs_of",
    "plain_rows",
    "plain_subjects",
    "recall",
    "recall_bounded",
    "recall_own",
    "recall_social",
    "section_sizes",
    "stored_ids",
    "told_ceiling",
    "told_groups",
    "unworded_beliefs",
    "unworded_subjects",
]


@dataclass(frozen=True, slots=True)
class ActEpisode:
    """One ``act`` the resident did or saw done (one piece of evidence each)."""

    actor: str
    action: str
    status: str
    day: float
    #: Why it failed, in the game's words (a stored text: see :mod:`sidecar.engine.texts`).
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ActHistory:
    """One actor and action as the resident did or saw it done, however often: how many
    episodes ended each way (statuses in the order first seen) and the few episodes its line
    names. A chore done every day of a long game is still five records, never a list of
    every episode."""

    counts: Mapping[str, int]
    first: ActEpisode
    last: ActEpisode
    #: The latest completed episode, and the latest that was not (None: there is none).
    last_done: ActEpisode | None
    last_failed: ActEpisode | None

    @classmethod
    def of(cls, episodes: Sequence[ActEpisode]) -> ActHistory:
        """The history of ``episodes`` (oldest first; at least one)."""
        counts: dict[str, int] = {}
        last_done = last_failed = None
        for a in episodes:
            counts[a.status] = counts.get(a.status, 0) + 1
            if a.status == "completed":
                last_done = a
            else:
                last_failed = a
        return cls(counts, episodes[0], episodes[-1], last_done, last_failed)


@dataclass(frozen=True, slots=True)
class TrustRecord:
    """The resident's trust in one source: per topic, when it first and last moved, and what
    moved it last (read by key, never its whole history: a source seen every day of a year
    has thousands of change records)."""

    source: str
    rows: tuple[dict[str, Any], ...]
    #: The day of its first and of its latest change record (0.0 when it has none).
    first_day: float
    last_day: float
    reason: dict[str, Any] | None


#: The narrative recalls at most this many promises per state and goals per state (the
#: latest learned): a resident with 10,000 promises still reads a bounded few.
PROMISES_RECALLED = 20
GOALS_RECALLED = 20


@dataclass(frozen=True, slots=True)
class OwnRecall:
    """What the promise and goal sections are made of, read in one bounded query each."""

    promises: tuple[tuple[PromiseView, PromiseRecord], ...] = ()
    goals: tuple[GoalRecord, ...] = ()


def recall_own(reader: Reader, world: str, resident: str) -> OwnRecall:
    """The resident's latest promises and goals per state (sidecar/read/promises.py words
    them)."""
    return OwnRecall(
        tuple(reader.promises_ranked(world, resident, per_state=PROMISES_RECALLED)),
        tuple(reader.goals_ranked(world, resident, per_state=GOALS_RECALLED)),
    )


@dataclass(frozen=True, slots=True)
class Recall:
    """What one resident's narrative is made of, as read from the store."""

    resident: str
    day: float
    registry: Registry
    #: ``(prefix, display text)`` of the world's declared roots in the narrative's language.
    root_texts: tuple[tuple[str, str], ...]
    #: Every belief but ``believes:`` ones (phrased elsewhere), without provenance lists.
    beliefs: tuple[Belief, ...]
    corrections: Mapping[tuple[str, str], Correction]
    contradictions: Mapping[tuple[str, str], Contradiction]
    #: What each ``action:`` root's episodes come to, in the order first done.
    acts: Mapping[str, ActHistory]
    trust: tuple[TrustRecord, ...]
    #: What the resident said, latest first (at most own_words.SAID_RECALLED utterances).
    said: tuple[dict[str, Any], ...] = ()
    #: Who told each multi-source, contested or corrected belief, by origin, and what first
    #: contradicted it (see :mod:`.sources`).
    sources: Mapping[str, Sources] = field(default_factory=dict)
    #: Its promises and goals (bounded: see :func:`recall_own`).
    own: OwnRecall = field(default_factory=OwnRecall)
    #: The rumours a social read with ``told=False`` read but left out of ``beliefs``, in
    #: root order (:func:`recall_social`; ``narrative._with_told`` adds them when needed).
    held: tuple[Belief, ...] = ()
    #: The plain facts and faded memories matching the focus that a social read with
    #: ``worded=False`` read but did not build, as rows of :data:`_BELIEF_COLUMNS` and their
    #: section (:data:`SECTION_SQL`) in root order (:func:`recall_social`;
    #: :func:`unworded_beliefs` builds them when needed).
    unworded: tuple[Sequence[Any], ...] = ()
    #: The beliefs whose tellers :mod:`.sources` chose among (every contested one, every
    #: one told by several people): more of theirs are looked up with them when needed.
    candidates: Sequence[Belief] = ()


def _rows(reader: Reader, sql: str, params: Sequence[Any] | Mapping[str, Any]) -> list[sqlite3.Row]:
    try:
        found = params if isinstance(params, Mapping) else tuple(params)
        return reader.conn.execute(sql, found).fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"query failed: {exc}") from exc


#: The columns of a belief the narrative words, ranks or sends: not its provenance lists
#: (``evidence_refs``, ``origins``, ``hops``, which grow with every piece of evidence), not
#: its aging.
_BELIEF_COLUMNS = (
    "resident, root, value, subject, confidence, state, source_kind, source_resident, "
    "people, places, topics, heard_from, formed_day, updated_day, last_evidence_day, importance, "
    "interpretation, intervention"
)


#: Where :data:`MATCHED_SQL`'s arguments are among :data:`_BELIEF_COLUMNS`.
_MATCHED = (1, 3, 8, 9, 10, 11)
#: Where a social read's row holds its section (:data:`SECTION_SQL`), after those columns.
_SECTION = 18
#: Where a social read's row says whether :data:`_SOCIAL` keeps it, after its section.
_SOCIAL_AT = _SECTION + 1


def stored_ids(text: str) -> tuple[str, ...]:
    """A stored list of ids; most are empty, and those need no parsing."""
    return () if text == "[]" else tuple(load_json(text))


def _beliefs(
    reader: Reader, world: str, resident: str, where: str | None = None
) -> tuple[Belief, ...]:
    """The resident's beliefs the narrative can phrase (or needs for its act lines), in
    root order: ``believes:`` roots ("what I think Bo believes") are left out in SQL, and
    only the columns above are read and parsed (the plan is pinned by
    ``tests/test_store_plans.py``); ``where`` narrows them further."""
    narrower = f" AND {where}" if where else ""
    try:
        found = reader.conn.execute(
            f"SELECT {_BELIEF_COLUMNS} FROM beliefs WHERE world = ? AND resident = ? "
            f"AND (root < 'believes:' OR root >= 'believes;'){narrower} ORDER BY root",
            (world, resident),
        ).fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"query failed: {exc}") from exc
    return _from_rows(found)


def unworded_beliefs(recalled: Recall) -> tuple[Belief, ...]:
    """The beliefs of the rows a social read left unbuilt (:attr:`Recall.unworded`)."""
    return _from_rows(recalled.unworded)


def unworded_subjects(
    recalled: Recall,
) -> Iterator[tuple[str, int, str | None, str, Any, str | None]]:
    """Of each row a social read left unbuilt (:attr:`Recall.unworded`: a plain fact or
    faded memory, untampered with, that matches the focus), the section
    :func:`.items.classify` places its belief in (read with it: :data:`SECTION_SQL`), the
    tier :func:`.ranking.rank` gives it (a notable fact ranks with what the resident was
    told), what its subject is worded from (the stored subject, the root and the value),
    and the place or person its lines merge under (:func:`.items.group_of`)."""
    from .items import NOTABLE_AT, group_of, tier_of  # items reads this module's records

    for row in recalled.unworded:
        section = row[_SECTION]
        notable = section != "faded" and (row[15] or 0.0) >= NOTABLE_AT
        tier = tier_of(section, True, True if notable else None)
        group = group_of(section, row[1], row[0], stored_ids(row[8]), stored_ids(row[9]))
        yield section, tier, row[3], row[1], load_json(row[2]), group


#: The sections of plain memories: faded ones and routine sure or believed facts, which a
#: social read only counts (:func:`recall_social`).
PLAIN_SECTIONS = ("sure", "believe", "faded")


def _worded_as_stored(clip: int, names: Sequence[str], params: dict[str, Any]) -> str:
    """A SQL condition on a belief row under which a line words its subject exactly as
    stored, so the subject's text there is as long as its column (each step of
    :func:`.phrasing.subject_text` leaves it alone): one to ``clip`` characters, all of
    them ASCII that JSON does not escape (so no control character), no run of spaces and no
    space or full stop at either end (nothing to clean), no ``{`` first (no language map),
    none of her own ``names`` inside, whatever its case (nothing put in the first person:
    an ASCII subject's casefold is its lower case, which ``LIKE`` ignores), and no root
    ending like an event's day (nothing put in the past). The names go into ``params``."""
    tests = [
        f"length(subject) BETWEEN 1 AND {int(clip)}",
        "length(CAST(json_quote(subject) AS BLOB)) = length(subject) + 2",
        "instr(subject, '  ') = 0",
        "substr(subject, 1, 1) NOT IN (' ', '{')",
        "substr(subject, -1, 1) NOT IN (' ', '.')",
        "substr(root, -3) <> 'day' AND substr(root, -4) NOT IN ('date', 'when')",
    ]
    for name in dict.fromkeys(n.casefold() for n in names if n):
        if name.isascii():  # (a casefold beyond ASCII is in no ASCII subject's)
            key = f"own{len(params)}"
            params[key] = (
                "%" + name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            )
            tests.append(f"subject NOT LIKE :{key} ESCAPE '\\'")
    return " AND ".join(tests)


#: A plain memory's row (:data:`PLAIN_SECTIONS`), as :data:`SECTION_SQL` places it. The
#: root's tests are kept off ``beliefs_shown`` (unary ``+``): this pass reads every plain
#: subject, which that index does not hold, so its primary-key range is cheaper.
_PLAIN = (
    "NOT (+root >= 'action:' AND +root < 'action;') "
    "AND NOT (+root >= 'believes:' AND +root < 'believes;') "
    "AND (intervention IS NULL OR intervention <> 'suppressed') "
    "AND (state = 'past' OR (state = 'influencing' AND source_kind <> 'hearsay' "
    "AND NOT (+root >= 'relation:' AND +root < 'relation;')))"
)
#: :data:`_PLAIN` with the root's tests as ``beliefs_shown`` states them, so that index may
#: serve it: for one section of a few rows (below), a range of the index and a lookup of
#: each row cost less than her whole primary-key range.
_PLAIN_SHOWN = _PLAIN.replace("+root", "root")
#: Of the rows of :data:`_PLAIN`, those :data:`SECTION_SQL` places in each plain section,
#: stated on the leading columns of ``beliefs_shown`` (state, source kind, confidence).
_PLAIN_SECTION_SQL = {
    "sure": "state = 'influencing' AND source_kind = 'firsthand' AND confidence >= 85",
    "believe": "state = 'influencing' AND NOT (source_kind = 'firsthand' AND confidence >= 85)",
    "faded": "state = 'past'",
}


#: Per plain section the fewest characters of the subjects worded as stored, and the other
#: plain rows as ``(section, subject, root, value)`` (:func:`plain_subjects`).
PlainSubjects = tuple[dict[str, int], list[tuple[str, str | None, str, Any]]]


def plain_subjects(
    reader: Reader,
    world: str,
    resident: str,
    clip: int,
    names: Sequence[str],
    sections: Collection[str] = PLAIN_SECTIONS,
    *,
    few: bool = False,
) -> PlainSubjects:
    """What bounds the lines of a resident's plain memories from below, per section of
    :data:`PLAIN_SECTIONS` (those of ``sections``), without building them: the fewest
    characters among the subjects a line words as stored (:func:`_worded_as_stored`, with
    her own ``names`` and the merged line's ``clip``), found in SQL, and every other plain
    row as ``(section, subject, root, value)`` for the caller to word (read in a second
    pass, only when there are any). Each pass is her primary-key range; ``few`` (the
    sections hold few of her rows): each section is a range of ``beliefs_shown`` instead,
    each row looked up (``tests/test_store_plans.py``)."""
    params: dict[str, Any] = {"world": world, "resident": resident}
    stored = _worded_as_stored(clip, names, params)
    wanted = [s for s in PLAIN_SECTIONS if s in sections]
    if not wanted:
        return {}, []
    head = "FROM beliefs WHERE world = :world AND resident = :resident AND "
    ranges: list[tuple[str | None, str]]
    if few:
        ranges = [(s, f"{head}{_PLAIN_SHOWN} AND {_PLAIN_SECTION_SQL[s]}") for s in wanted]
    else:
        only = ""
        if len(wanted) < len(PLAIN_SECTIONS):
            only = " AND (" + " OR ".join(f"({_PLAIN_SECTION_SQL[s]})" for s in wanted) + ")"
        ranges = [(None, f"{head}{_PLAIN}{only}")]
    fewest: dict[str, int] = {}
    unstored: list[str] = []  # the ranges holding rows to word here
    for section, rows in ranges:
        # (LIMIT -1 keeps the inner query a co-routine: flattened, each use of its length
        # would evaluate the condition again)
        inner = (
            f"SELECT {SECTION_SQL} AS section, CASE WHEN {stored} THEN length(subject) "
            f"ELSE -1 END AS n {rows} LIMIT -1"
        )
        shown = wanted if section is None else [section]
        shortest = ", ".join(f"min(n) FILTER (WHERE n >= 0 AND section = '{s}')" for s in shown)
        ((*found, others),) = _rows(
            reader, f"SELECT {shortest}, count(*) FILTER (WHERE n < 0) FROM ({inner})", params
        )
        fewest.update((s, n) for s, n in zip(shown, found, strict=True) if n is not None)
        if others:
            unstored.append(rows)
    worded: list[tuple[str, str | None, str, Any]] = []
    for rows in unstored:
        found = _rows(
            reader, f"SELECT {SECTION_SQL}, subject, root, value {rows} AND NOT ({stored})", params
        )
        worded += [(r[0], r[1], r[2], load_json(r[3])) for r in found]
    return fewest, worded


#: The columns of :func:`plain_rows`: what ranks a plain memory and places it in a line.
#: ``score`` is its unrounded score without a focus (:data:`_SCORE_SQL`: the float operations
#: of :func:`.ranking._scored`, in the same order, on the same values, so the same double).
PLAIN_COLUMNS = "root, section, updated_day, importance, confidence, people, places, score"


#: The plain memories a social read leaves unread (tampered with by no player still:
#: :func:`recall_social` reads those).
_UNREAD_PLAIN_ROWS = f"{_PLAIN} AND (intervention IS NULL OR intervention = 'discovered')"


def plain_rows(
    reader: Reader, world: str, resident: str, today: float, *, naming: str | None = None
) -> Sequence[Sequence[Any]]:
    """Every plain memory a social read leaves unread (:data:`PLAIN_SECTIONS`), as its
    :data:`PLAIN_COLUMNS` (``section`` by :data:`SECTION_SQL`, ``people`` and ``places`` as
    stored, the score on ``today``), in root order, on her primary-key range: no belief is
    built (``tests/test_store_plans.py``).

    ``naming``: only those whose ``people`` or ``places`` list may hold it (each holds it
    between quotes, or an escape where JSON may have escaped it: a superset, tested first,
    before what makes a row plain), those that may merge under it (:func:`.items.group_of`
    tells)."""
    params: dict[str, Any] = {"world": world, "resident": resident, "today": today}
    test = ""
    if naming is not None:
        params["quoted"] = f'"{naming}"'
        test = "instr(places, :quoted) > 0 OR instr(people, :quoted) > 0"
        if not naming.isascii() or any(c in '"\\' or c < " " for c in naming):
            test += " OR instr(places, '\\') > 0 OR instr(people, '\\') > 0"
        test = f"({test}) AND "
    return reader.tuples(
        f"SELECT root, {SECTION_SQL}, updated_day, importance, confidence, people, places, "
        f"{_SCORE_SQL} FROM beliefs WHERE world = :world AND resident = :resident "
        f"AND {test}{_UNREAD_PLAIN_ROWS} ORDER BY root",
        params,
    )


def plain_families(
    reader: Reader, world: str, resident: str, families: Sequence[str]
) -> Sequence[Sequence[Any]]:
    """The root and section of each row of :func:`plain_rows` under these ``families`` (a
    root ``family:…``: each family's members, and those of the families under it, once per
    family it is under), read as one primary-key range per family."""
    return reader.tuples(
        "WITH f(family) AS (SELECT value FROM json_each(?)) "
        f"SELECT root, {SECTION_SQL} FROM f JOIN beliefs "
        "ON world = ? AND resident = ? AND root >= family || ':' AND root < family || ';' "
        f"WHERE {_UNREAD_PLAIN_ROWS}",
        (orjson.dumps(list(families)).decode(), world, resident),
    )


def beliefs_of(
    reader: Reader, world: str, resident: str, roots: Sequence[str]
) -> tuple[Belief, ...]:
    """The beliefs of ``roots`` (as :func:`recall` reads them), in root order, each by
    primary key."""
    return _from_rows(
        _rows(
            reader,
            f"SELECT {_BELIEF_COLUMNS} FROM beliefs WHERE world = ? AND resident = ? "
            "AND root IN (SELECT value FROM json_each(?)) ORDER BY root",
            (world, resident, orjson.dumps(list(roots)).decode()),
        )
    )


def _from_rows(found: Sequence[Sequence[Any]]) -> tuple[Belief, ...]:
    """The beliefs of rows of :data:`_BELIEF_COLUMNS` (further columns ignored), built
    positionally (a full read builds one per belief the resident holds); the columns not
    read keep their defaults."""
    states = {str(s): s for s in State}
    kinds = {str(k): k for k in SourceKind}
    interventions = {str(i): i for i in Intervention}
    # fmt: off
    return tuple(
        new_belief(
            r[0], r[1], load_json(r[2]), r[3], r[4], states[r[5]], kinds[r[6]], r[7],
            r[12], r[13], r[14], r[16], stored_ids(r[8]), stored_ids(r[9]), stored_ids(r[10]),
            interventions[r[17]] if r[17] else None, (), 0, stored_ids(r[11]),
            None, (), (), None, 0.0, r[15], None, 0,
        )
        for r in found
    )
    # fmt: on


#: Per ``action:`` root of a resident and status: how many episodes, the first and the
#: latest by log position. One range of the covering partial index ``evidence_acts``
#: (migration 0024), which holds exactly the pieces ``act`` events gave: no row is read.
_ACT_COUNTS = (
    "SELECT root, value, count(*), min(event_seq), max(event_seq) FROM evidence "
    "WHERE world = ? AND resident = ? AND root >= 'action:' AND root < 'action;' "
    "AND source_kind = 'firsthand' GROUP BY root, value"
)


def _episode(body: str) -> ActEpisode:
    """The episode an ``act`` event's logged body records."""
    act = load_json(body)
    reason = act.get("reason")
    if isinstance(reason, dict):
        reason = encode_texts(reason)
    return ActEpisode(act["actor"], act["action"], act["status"], act["day"], reason)


def act_histories(reader: Reader, world: str, resident: str) -> dict[str, ActHistory]:
    """What each act the resident did or saw done comes to (:class:`ActHistory`): counted in
    SQL, and only the episodes a line names read from the log (at most four per act)."""
    if not reader.has_act_index():  # a file no writer has opened since migration 0024
        return act_histories_by_episode(reader, world, resident)
    per_root: dict[str, list[tuple[str, int, int, int]]] = defaultdict(list)
    for root, value, n, first, last in _rows(reader, _ACT_COUNTS, (world, resident)):
        per_root[root].append((load_json(value), n, first, last))
    named: dict[str, tuple[int, int, int | None, int | None]] = {}
    for root, statuses in per_root.items():
        statuses.sort(key=lambda s: s[2])  # in the order first seen
        failed = [s[3] for s in statuses if s[0] != "completed"]
        named[root] = (
            statuses[0][2],
            max(s[3] for s in statuses),
            next((s[3] for s in statuses if s[0] == "completed"), None),  # (one row at most)
            max(failed) if failed else None,
        )
    seqs = sorted({seq for four in named.values() for seq in four if seq is not None})
    bodies = {
        seq: _episode(body)
        for seq, body in _rows(
            reader,
            "SELECT seq, body FROM events WHERE world = ? AND seq IN "
            "(SELECT value FROM json_each(?))",
            (world, orjson.dumps(seqs).decode()),
        )
    }
    out: dict[str, ActHistory] = {}
    for root in sorted(named, key=lambda r: named[r][0]):  # in the order first done
        first, last, done_at, failed_at = named[root]
        out[root] = ActHistory(
            {status: n for status, n, _, _ in per_root[root]},
            bodies[first],
            bodies[last],
            None if done_at is None else bodies[done_at],
            None if failed_at is None else bodies[failed_at],
        )
    return out


def act_histories_by_episode(reader: Reader, world: str, resident: str) -> dict[str, ActHistory]:
    """:func:`act_histories` from every episode, for a file without index ``evidence_acts``: the
    resident's action evidence only (a range of its index evidence_by_belief), then each one's
    event, never the world's events nor the resident's other evidence."""
    rows = _rows(
        reader,
        "SELECT ev.root, e.body FROM evidence ev CROSS JOIN events e "
        "ON e.world = ev.world AND e.event_id = ev.event_id "
        "WHERE ev.world = ? AND ev.resident = ? AND ev.root >= 'action:' "
        "AND ev.root < 'action;' AND e.kind = 'act' ORDER BY e.seq",
        (world, resident),
    )
    episodes: dict[str, list[ActEpisode]] = defaultdict(list)
    for root, body in rows:
        episodes[root].append(_episode(body))
    return {root: ActHistory.of(acts) for root, acts in episodes.items()}


_MOVES_PAGE = 20
_MOVES = (
    "SELECT seq, detail, evidence_id, event_id, day FROM changes "
    "WHERE world = ? AND resident = ? AND root = ? AND (? IS NULL OR seq < ?) "
    f"AND {TRUST_MOVES} ORDER BY seq DESC LIMIT ?"
)


def _moves(reader: Reader, world: str, resident: str, root: str) -> Iterator[sqlite3.Row]:
    """One trust root's confirmations, contradictions and corrections from evidence, latest
    first, a page at a time (partial index ``changes_trust_moves`` read backwards)."""
    before = None
    while True:
        page = _rows(reader, _MOVES, (world, resident, root, before, before, _MOVES_PAGE))
        yield from page
        if len(page) < _MOVES_PAGE:
            return
        before = page[-1]["seq"]


def _reason(
    reader: Reader, world: str, resident: str, roots: Sequence[str]
) -> dict[str, Any] | None:
    """What moved trust in a source last, from evidence: the told subject and what was
    seen. The latest move over the source's roots (general and per topic) whose evidence
    is still there."""
    latest = heapq.merge(
        *(_moves(reader, world, resident, root) for root in roots), key=lambda r: -r["seq"]
    )
    for change in latest:
        found = _rows(
            reader,
            "SELECT root, subject FROM evidence WHERE world = ? AND evidence_id = ?",
            (world, change["evidence_id"]),
        )
        if not found:
            continue
        root, seen = found[0]["root"], found[0]["subject"]
        told = _rows(
            reader,
            "SELECT subject_before FROM changes WHERE world = ? AND resident = ? AND root = ? "
            "AND event_id = ? AND kind <> 'trust' ORDER BY seq LIMIT 1",
            (world, resident, root, change["event_id"]),
        )
        before = told[0]["subject_before"] if told else None
        return {
            "change": change["detail"],
            "event_id": change["event_id"],
            "day": change["day"],
            "root": root,
            "told": before,
            "seen": seen,
        }
    return None


def _end_day(reader: Reader, world: str, resident: str, roots: Sequence[str], last: bool) -> float:
    """The day of the source's first (or latest) change record over its roots, by key."""
    order = "DESC" if last else "ASC"
    ends = [
        row
        for root in roots
        for row in _rows(
            reader,
            f"SELECT seq, day FROM changes WHERE world = ? AND resident = ? AND root = ? "
            f"ORDER BY seq {order} LIMIT 1",
            (world, resident, root),
        )
    ]
    if not ends:
        return 0.0
    pick = max if last else min
    return float(pick(ends, key=lambda r: r["seq"])["day"])


def _trust(reader: Reader, world: str, resident: str) -> tuple[TrustRecord, ...]:
    by_source: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in _rows(
        reader,
        "SELECT source, topic, value FROM trust WHERE world = ? AND resident = ? "
        "ORDER BY source, topic",
        (world, resident),
    ):
        by_source[row["source"]].append(
            {"source": row["source"], "topic": row["topic"] or None, "value": row["value"]}
        )
    records = []
    for source, rows in by_source.items():
        roots = [trust_root(source, r["topic"]) for r in rows]
        records.append(
            TrustRecord(
                source,
                tuple(rows),
                _end_day(reader, world, resident, roots, last=False),
                _end_day(reader, world, resident, roots, last=True),
                _reason(reader, world, resident, roots),
            )
        )
    return tuple(records)


def recall(reader: Reader, world: str, resident: str, lang: str) -> Recall:
    """Everything ``resident``'s narrative in ``lang`` needs, read once."""
    beliefs = _beliefs(reader, world, resident)
    return _recalled(reader, world, resident, lang, beliefs, beliefs)


def _recalled(
    reader: Reader, world: str, resident: str, lang: str,
    beliefs: tuple[Belief, ...], told: Sequence[Belief], wanted: Collection[str] | None = None,
    registry: Registry | None = None,
) -> Recall:  # fmt: skip
    """The rest of a recall around its ``beliefs``; ``told`` are the beliefs whose tellers
    are looked up (the beliefs themselves, or a wider read of them), of the roots ``wanted``
    (None: all); ``registry``, when the read already loaded it."""
    found_corrections = corrections(reader, world, resident)
    return Recall(
        resident=resident,
        day=reader.world_day(world),
        registry=load_registry(reader, world) if registry is None else registry,
        root_texts=load_root_texts(reader, world, lang),
        beliefs=beliefs,
        corrections=found_corrections,
        contradictions=_contradictions(reader, world, resident, beliefs),
        acts=act_histories(reader, world, resident),
        trust=_trust(reader, world, resident),
        said=_said(reader, world, resident),
        sources=load_sources(reader, world, resident, told, found_corrections, wanted),
        own=recall_own(reader, world, resident),
        candidates=told,
    )


def _contradictions(
    reader: Reader, world: str, resident: str, beliefs: Iterable[Belief]
) -> dict[tuple[str, str], Contradiction]:
    """The latest contradiction of each contested one of ``beliefs``: a contradiction words
    only a contested belief (:func:`.items.classify_belief`), so only theirs are read, never
    those of every belief ever contradicted in a long game."""
    contested = [b.root for b in beliefs if b.state in (State.DOUBTFUL, State.ANOMALOUS)]
    return contradictions(reader, world, resident, roots=contested)


def _said(reader: Reader, world: str, resident: str) -> tuple[dict[str, Any], ...]:
    """The resident's latest own words: one bounded read of the ``said`` primary key."""
    from .own_words import SAID_RECALLED

    return tuple(latest_said(reader, world, resident, SAID_RECALLED))


# -- bounded recall: a big resident read in bounded steps (issue 17) -----------------------

#: Roots no section phrases from its belief: "what I think Bo believes" and acts (episodes).
_PHRASED = (
    "NOT (root >= 'action:' AND root < 'action;') "
    "AND NOT (root >= 'believes:' AND root < 'believes;')"
)
_SHOWN = f"{_PHRASED} AND (intervention IS NULL OR intervention <> 'suppressed')"
#: The section of a belief, as :func:`.items.classify` places it.
SECTION_SQL = (
    "CASE WHEN state = 'past' THEN 'faded' WHEN state = 'doubtful' THEN 'doubts' "
    "WHEN state = 'anomalous' THEN 'anomalies' WHEN state = 'corrected' THEN 'corrections' "
    "WHEN root >= 'relation:' AND root < 'relation;' THEN 'people' "
    "WHEN source_kind = 'hearsay' THEN 'told' "
    "WHEN source_kind = 'firsthand' AND confidence >= 85 THEN 'sure' ELSE 'believe' END"
)
#: Its tier and unrounded score without a focus, as :mod:`.ranking` computes them (the
#: score's float operations in the same order; the bounded read checks the rounding margin).
_TIER_SQL = (
    "CASE section WHEN 'doubts' THEN 0 WHEN 'anomalies' THEN 0 WHEN 'corrections' THEN 1 "
    "WHEN 'faded' THEN 6 WHEN 'told' THEN 4 WHEN 'people' THEN 4 "
    "ELSE CASE WHEN coalesce(importance, 0.0) >= 0.5 THEN 4 ELSE 5 END END"
)
_SCORE_SQL = (
    "pow(0.5, max(0.0, :today - updated_day) / 7.0) + min(1.0, coalesce(importance, 0.0)) "
    "+ 0.5 * (confidence / 100.0)"
)


#: The focus terms a belief row matches: a function only the focused bounded read registers,
#: for its own queries (see :func:`_protected_rows`).
MATCHED_SQL = "credence_matched(root, subject, people, places, topics, heard_from)"
#: :data:`_TIER_SQL` for a focus: what matches it ranks two tiers up, as
#: :func:`.items.tier_of` has it (contested, corrected and faded memories keep theirs).
_FOCUSED_TIER_SQL = (
    "CASE section WHEN 'doubts' THEN 0 WHEN 'anomalies' THEN 0 WHEN 'corrections' THEN 1 "
    "WHEN 'faded' THEN 6 ELSE CASE WHEN section IN ('told', 'people') "
    "OR coalesce(importance, 0.0) >= 0.5 THEN 4 ELSE 5 END - 2 * (matched > 0) END"
)


@dataclass(frozen=True, slots=True)
class Cut:
    """A section whose protected items were read only up to the first ``read``, in rank
    order: the best one left unread has tier ``tier`` and unrounded score ``score`` (and
    every other unread one ranks no better)."""

    read: int
    tier: int
    score: float


@dataclass(frozen=True, slots=True)
class Bounded:
    """What a bounded recall read of a resident's beliefs: every section's size (the items
    :func:`.items.classify` makes of beliefs), and the sections whose protected items it
    read only in part."""

    sizes: Mapping[str, int]
    cuts: Mapping[str, Cut]


def _protected_rows(
    reader: Reader,
    world: str,
    resident: str,
    today: float,
    limit: int,
    matched: Callable[..., int] | None = None,
) -> tuple[list[Belief], dict[str, Cut]]:
    """The best ``limit`` protected beliefs of each section, in rank order, and where each
    section was cut (the best one left unread bounds all the others): contested and
    corrected ones ranked per state on the covering partial index ``beliefs_shown`` (one tier
    each), those with an active intervention on the partial index ``beliefs_intervened``
    (per section); then only the chosen rows are read, by primary key.

    For a focus, ``matched`` counts the focus terms a row matches (:func:`.ranking.row_matches`);
    it is registered as :data:`MATCHED_SQL`'s function for these queries, which then rank by
    the focused tier and score (reading each protected row, no longer only its index entry)."""
    params = {"world": world, "resident": resident, "today": today, "limit": limit}
    score, tampered, tier = _SCORE_SQL, "", _TIER_SQL
    beliefs = (
        "beliefs WHERE world = :world AND resident = :resident "
        "AND intervention IN ('implanted', 'distorted') "
        f"AND state NOT IN ('doubtful', 'anomalous', 'corrected') AND {_SHOWN}"
    )
    if matched is not None:
        score = f"3.0 * (1 - pow(0.5, {MATCHED_SQL})) + {_SCORE_SQL}"
        # the terms each tampered-with row matches, counted once (its tier and score use it)
        tampered = (
            f"WITH tampered AS MATERIALIZED (SELECT root, updated_day, importance, confidence, "
            f"{SECTION_SQL} AS section, {MATCHED_SQL} AS matched FROM {beliefs}) "
        )
        beliefs, tier = "tampered", _FOCUSED_TIER_SQL
        reader.conn.create_function(MATCHED_SQL.split("(")[0], 6, matched, deterministic=True)
    inner = (
        f"SELECT root, updated_day, importance, {SECTION_SQL} AS section, {score} AS score "
        f"FROM {beliefs}"
        if matched is None
        else "SELECT root, updated_day, importance, section, matched, "
        f"3.0 * (1 - pow(0.5, matched)) + {_SCORE_SQL} AS score FROM tampered"
    )
    found: list[sqlite3.Row] = []
    try:
        for state in ("doubtful", "anomalous", "corrected"):
            found += _rows(
                reader,
                f"SELECT root, {SECTION_SQL} AS section, {score} AS score, "
                f"CASE WHEN state = 'corrected' THEN 1 ELSE 0 END AS tier FROM beliefs "
                f"WHERE world = :world AND resident = :resident AND state = '{state}' "
                f"AND {_SHOWN} ORDER BY score DESC, updated_day DESC, root LIMIT :limit + 1",
                params,
            )
        found += _rows(
            reader,
            f"{tampered}SELECT root, section, score, tier FROM (SELECT root, section, tier, score, "
            "row_number() OVER (PARTITION BY section ORDER BY tier, score DESC, "
            "updated_day DESC, root) AS n "
            f"FROM (SELECT root, section, updated_day, score, {tier} AS tier FROM ({inner}))) "
            "WHERE n <= :limit + 1 ORDER BY section, n",
            params,
        )
    finally:
        if matched is not None:  # no closure left on the connection
            reader.conn.create_function(MATCHED_SQL.split("(")[0], 6, None)
    chosen: list[str] = []
    cuts: dict[str, Cut] = {}
    taken: dict[str, int] = defaultdict(int)
    for r in found:  # each section's rows in rank order
        if taken[r["section"]] == limit:
            cuts[r["section"]] = Cut(limit, r["tier"], r["score"])
            continue
        taken[r["section"]] += 1
        chosen.append(r["root"])
    return list(beliefs_of(reader, world, resident, chosen)), cuts


def _sizes(reader: Reader, world: str, resident: str) -> dict[str, int]:
    """How many items each section makes of the resident's beliefs, counted on the partial
    index ``beliefs_shown`` (which holds exactly the beliefs a section can show, with their
    state, source, confidence and root) without reading a row: per state and source in one
    pass over it; among those still held, the sure ones on its range of firsthand
    confidence ≥ 85; and the people (``relation:`` roots, whatever their source) on their
    own primary-key range (a few hundred rows, where the index would be walked whole)."""
    grouped = _rows(
        reader,
        "SELECT state, source_kind, count(*) FROM beliefs "
        f"WHERE world = ? AND resident = ? AND {_SHOWN} GROUP BY state, source_kind",
        (world, resident),
    )
    ((sure,),) = _rows(
        reader,
        f"SELECT count(*) FROM beliefs WHERE world = ? AND resident = ? AND {_SHOWN} "
        "AND state = 'influencing' AND source_kind = 'firsthand' AND confidence >= 85",
        (world, resident),
    )
    people = _rows(
        reader,
        "SELECT source_kind, count(*), sum(confidence >= 85) FROM beliefs "
        "WHERE world = ? AND resident = ? AND root >= 'relation:' AND root < 'relation;' "
        f"AND {_SHOWN} AND +state = 'influencing' GROUP BY source_kind",  # + : not on the index
        (world, resident),
    )
    sizes: dict[str, int] = defaultdict(int)
    fixed = {"past": "faded", "doubtful": "doubts", "anomalous": "anomalies"}
    fixed["corrected"] = "corrections"
    for state, kind, n in grouped:
        if state in fixed:
            sizes[fixed[state]] += n
        else:
            sizes["told" if kind == "hearsay" else "believe"] += n
    sizes["sure"] += sure
    sizes["believe"] -= sure
    for kind, n, confident in people:  # relation: roots are people, whatever their source
        sizes["people"] += n
        if kind == "hearsay":
            sizes["told"] -= n
        elif kind == "firsthand":
            sizes["sure"] -= confident
            sizes["believe"] -= n - confident
        else:
            sizes["believe"] -= n
    return {k: v for k, v in sizes.items() if v}


def _counted_items(reader: Reader, world: str, resident: str) -> tuple[int, int] | None:
    """How many act items (an ``action:`` belief with episodes) and trust items (a source in
    the trust table) :func:`.items.classify` would make, without reading them: neither is
    ever protected, so a bounded narrative only counts them. None when an ``action:`` belief
    carries an active intervention (its act item would be protected)."""
    # An episode of the act: one probe of the covering index evidence_acts (migration 0024),
    # or on a file without it, its evidence joined to the log until an ``act`` event shows.
    episode = (
        "SELECT 1 FROM evidence ev WHERE ev.world = b.world AND ev.resident = b.resident "
        "AND ev.root = b.root AND ev.root >= 'action:' AND ev.root < 'action;' "
        "AND ev.source_kind = 'firsthand'"
        if reader.has_act_index()
        else "SELECT 1 FROM evidence ev CROSS JOIN events e "
        "ON e.world = ev.world AND e.event_id = ev.event_id WHERE ev.world = b.world "
        "AND ev.resident = b.resident AND ev.root = b.root AND e.kind = 'act'"
    )
    (acts, tampered), *_ = _rows(
        reader,
        "SELECT count(*), sum(b.intervention IN ('implanted', 'distorted')) FROM beliefs b "
        "WHERE b.world = ? AND b.resident = ? AND b.root >= 'action:' AND b.root < 'action;' "
        f"AND EXISTS ({episode})",
        (world, resident),
    )
    if tampered:
        return None
    ((sources,),) = _rows(
        reader,
        "SELECT count(DISTINCT source) FROM trust WHERE world = ? AND resident = ?",
        (world, resident),
    )
    return acts, sources


def section_sizes(reader: Reader, world: str, resident: str) -> tuple[dict[str, int], int]:
    """Every section's size (see :func:`recall_bounded`), and how many beliefs outside the
    contested and corrected ones carry an active intervention (partial index
    ``beliefs_intervened``): together, how many protected memories there are."""
    (intervened,) = _rows(
        reader,
        "SELECT count(*) FROM beliefs WHERE world = ? AND resident = ? "
        "AND intervention IN ('implanted', 'distorted') "
        f"AND state NOT IN ('doubtful', 'anomalous', 'corrected') AND {_SHOWN}",
        (world, resident),
    )[0]
    return _sizes(reader, world, resident), intervened


def recall_bounded(
    reader: Reader,
    world: str,
    resident: str,
    lang: str,
    limit: int,
    sizes: Mapping[str, int],
    focus: Focus | None = None,
) -> tuple[Recall, Bounded] | None:
    """What a narrative of a big resident needs when its contested, corrected and
    tampered-with memories alone overflow the budget (the rest are then only counted): the
    best ``limit`` of those per section, for ``focus`` (ranked in SQL by the rules of
    :mod:`.ranking`), and its own words, promises and goals as :func:`recall` reads them;
    every section's ``sizes`` (:func:`section_sizes`) with its act and trust items counted
    in. The caller checks the layout stayed within what was read
    (:func:`.packing.pack_bounded`) and falls back to :func:`recall` otherwise; None when an
    act item would be protected."""
    from .ranking import row_matches  # ranking reads this module's records (via items)

    counted = _counted_items(reader, world, resident)
    if counted is None:
        return None
    acts, sources = counted
    today = reader.world_day(world)
    registry = load_registry(reader, world)
    matched = row_matches(focus, registry) if focus else None
    protected, cuts = _protected_rows(reader, world, resident, today, limit, matched)
    # A correction words only a corrected belief (a contradiction: _contradictions).
    corrected = [b.root for b in protected if b.state is State.CORRECTED]
    recalled = Recall(
        resident=resident,
        day=today,
        registry=registry,
        root_texts=load_root_texts(reader, world, lang),
        beliefs=tuple(protected),
        corrections=corrections(reader, world, resident, roots=corrected),
        contradictions=_contradictions(reader, world, resident, protected),
        acts={},
        trust=(),
        said=_said(reader, world, resident),
        own=recall_own(reader, world, resident),
    )
    total = dict(sizes)
    for section, n in (("acts", acts), ("people", sources)):
        if n:
            total[section] = total.get(section, 0) + n
    return recalled, Bounded(total, cuts)


# -- the social read: a big resident with few doubts, its plain facts only counted ---------

#: The beliefs :func:`recall_social` reads: every one a section ranks above the plain facts
#: or protects (contested, corrected, tampered with, hearsay and people still held), and the
#: ``action:`` ones its act items are made of. Left unread: faded memories and the plain
#: sure and believed facts (tier 5 and 6, see :func:`.items.tier_of`).
_SOCIAL = (
    "(state IN ('doubtful', 'anomalous', 'corrected') "
    "OR intervention IN ('implanted', 'distorted') "
    "OR (root >= 'action:' AND root < 'action;') "
    "OR (state = 'influencing' AND (source_kind = 'hearsay' "
    "OR (root >= 'relation:' AND root < 'relation;'))))"
)


#: :data:`_SOCIAL` but for the rumours still held (``told=False`` of :func:`recall_social`,
#: which reads them all the same and holds them back: :attr:`Recall.held`).
_SOCIAL_FEW = (
    "(state IN ('doubtful', 'anomalous', 'corrected') "
    "OR intervention IN ('implanted', 'distorted') "
    "OR (root >= 'action:' AND root < 'action;') "
    "OR (state = 'influencing' AND root >= 'relation:' AND root < 'relation;'))"
)
#: Beliefs told by several people: candidates for their tellers whatever their section
#: (:func:`.sources.load_sources`), so a social read reads them all.
_TOLD_BY_SEVERAL = "(heard_from <> '[]' AND json_array_length(heard_from) > 1)"
#: Those and the suppressed ones: the partial index ``beliefs_sourced`` holds exactly these
#: (migration 0022).
_SOURCED = f"({_TOLD_BY_SEVERAL} OR intervention = 'suppressed')"
_NOT_BELIEVES = "(root < 'believes:' OR root >= 'believes;')"
#: :data:`_SOCIAL`, or :data:`_SOURCED`, as parts each on a range of an index (together the
#: same rows, any of them in several): the contested and the rumours still held on
#: ``beliefs_shown`` (which leaves out the suppressed ones, acts and ``believes:``), the
#: tampered-with on ``beliefs_intervened``, acts and people on their primary-key ranges, and
#: the suppressed ones and those told by several on ``beliefs_sourced``.
_SOCIAL_PARTS = (
    f"state IN ('doubtful', 'anomalous', 'corrected') AND {_SHOWN}",
    f"intervention IN ('implanted', 'distorted') AND {_NOT_BELIEVES}",
    "root >= 'action:' AND root < 'action;'",
    f"state = 'influencing' AND source_kind = 'hearsay' AND {_SHOWN}",
    "root >= 'relation:' AND root < 'relation;' AND +state = 'influencing'",
    f"{_SOURCED} AND {_NOT_BELIEVES}",
)


#: The rumours still held that :data:`_SOCIAL_FEW` leaves out (section ``told``, neither
#: about people nor tampered with): a range of the covering index ``beliefs_shown``.
_TOLD = (
    f"{_SHOWN} AND state = 'influencing' AND source_kind = 'hearsay' "
    "AND NOT (root >= 'relation:' AND root < 'relation;') "
    "AND (intervention IS NULL OR intervention NOT IN ('implanted', 'distorted'))"
)


def recall_social(
    reader: Reader, world: str, resident: str, lang: str, *, told: bool = True,
    focus: Focus | None = None, worded: bool = True,
) -> Recall | None:  # fmt: skip
    """What a narrative of a big resident needs when its plain facts and faded memories are
    only to be counted (:func:`.packing.pack_social` checks they could never have had a
    line): :func:`recall` but for those beliefs. None when a plain fact is notable (it
    would rank with what the resident was told, in a family or a merged line with unread
    ones). ``told=False``: the rumours it holds are read but held back, neither classified
    nor ranked (:attr:`Recall.held`; :func:`told_ceiling` bounds their rank).

    With a ``focus``, the plain facts and faded memories that match it are read too (they
    rank with it, two tiers up): in the same pass over the resident's rows, a SQL
    prefilter (:func:`.ranking.row_prefilter`) keeps the rows that may match, and the
    focus function (:func:`.ranking.row_matches`) counts their terms, once per row (in
    SQL only for a subject beyond ASCII, which the prefilter cannot judge: it would keep
    them all). ``worded=False``: those are read but not built (:attr:`Recall.unworded`):
    most of a big resident's never get a line, which the packer can tell from the
    shortest subject among them (``narrative._social``)."""
    from .items import NOTABLE_AT  # items reads this module's records
    from .ranking import WIDE_SQL, row_matched, row_prefilter

    ((notable,),) = _rows(
        reader,
        f"SELECT count(*) FROM beliefs WHERE world = ? AND resident = ? AND {_SHOWN} "
        f"AND state = 'influencing' AND source_kind <> 'hearsay' AND importance >= {NOTABLE_AT} "
        "AND NOT (root >= 'relation:' AND root < 'relation;') "
        "AND (intervention IS NULL OR intervention NOT IN ('implanted', 'distorted'))",
        (world, resident),
    )
    if notable:
        return None
    # Beliefs told by several people are candidates for their sources (sources._chosen, the
    # most recent first) whatever their section: read too, so the same ones get them.
    # Each row's section (:data:`SECTION_SQL`: an unworded one is placed by it) and whether
    # _SOCIAL keeps it; held back, also whether _SOCIAL_FEW does (else the same column).
    few = _SOCIAL_AT if told else _SOCIAL_AT + 1
    params: dict[str, Any] = {"world": world, "resident": resident}
    matching, count, registry = "", None, None
    if focus:
        registry = load_registry(reader, world)
        prefilter, found = row_prefilter(focus, registry)
        params.update(found)
        matching = f"OR {prefilter} OR ({WIDE_SQL} AND {MATCHED_SQL} > 0) "
        count = row_matched(focus, registry)
        reader.conn.create_function(MATCHED_SQL.split("(")[0], 6, count, deterministic=True)
    selected = f"SELECT {_BELIEF_COLUMNS}, {SECTION_SQL}, {_SOCIAL}"
    selected += " FROM beliefs " if told else f", {_SOCIAL_FEW} FROM beliefs "
    selected += "WHERE world = :world AND resident = :resident AND "
    try:
        if focus:
            rows = _focused_rows(reader, selected, matching, params)
        else:  # only the rows it keeps, each part on an index
            rows = _parts_rows(reader, selected, params)
    finally:
        if focus:  # no closure left on the connection
            reader.conn.create_function(MATCHED_SQL.split("(")[0], 6, None)
    # A plain fact that matches the focus is read to be worded (the prefilter may keep some
    # that do not: counted here, and left out); one told by several (and not matching it)
    # still takes its place among those whose tellers are named, but no line of this read
    # is ever its own: its tellers are not looked up.
    matched = {
        r[1]
        for r in rows
        if count is not None and not r[_SOCIAL_AT] and count(*(r[i] for i in _MATCHED))
    }
    # Unworded: those matching plain rows (untampered with) are kept as rows; only the ones
    # told by several are built, to take their place among the candidates for tellers.
    unworded = tuple(
        r for r in rows if not worded and not r[_SOCIAL_AT] and r[17] is None and r[1] in matched
    )
    skipped = {id(r) for r in unworded if len(stored_ids(r[11])) < 2}
    built = [r for r in rows if id(r) not in skipped] if skipped else rows
    read = _from_rows(built)
    apart = {r[1] for r in unworded}
    beliefs = tuple(
        b
        for b, r in zip(read, built, strict=True)
        if r[few] or (b.root in matched and b.root not in apart)
    )
    wanted = {r[1] for r in rows if r[_SOCIAL_AT] or r[1] in matched}
    recalled = _recalled(reader, world, resident, lang, beliefs, read, wanted, registry)
    if unworded:
        recalled = replace(recalled, unworded=unworded)
    if told:
        return recalled
    # Held back: what _SOCIAL reads and _SOCIAL_FEW does not (the rumours still held, but
    # suppressed ones, which no section shows): exactly the rows of _TOLD.
    held = tuple(
        b
        for b, r in zip(read, built, strict=True)
        if r[_SOCIAL_AT] and not r[few] and b.intervention is not Intervention.SUPPRESSED
    )
    return replace(recalled, held=held)


def _parts_rows(reader: Reader, selected: str, params: Mapping[str, Any]) -> list[Any]:
    """The rows of an unfocused social read (:data:`_SOCIAL_PARTS`, each a range of an
    index), once each in root order: read as one ``UNION ALL`` and put in order here. (A
    ``UNION … ORDER BY root`` sorts every part in a temporary B-tree and merges whole rows:
    more than twice the time for a resident with hundreds of rumours and people.)"""
    sql = " UNION ALL ".join(selected + part for part in _SOCIAL_PARTS)
    once = {r[1]: r for r in _rows(reader, sql, params)}  # a belief in several parts
    return [once[root] for root in sorted(once)]


def _focused_rows(
    reader: Reader, selected: str, matching: str, params: Mapping[str, Any]
) -> list[Any]:
    """The rows of a focused social read, in root order: those it keeps and those that
    match the focus (anywhere in her range: one pass over it, both sides of the
    ``believes:`` roots, each a primary-key range in root order), and those told by several
    (on ``beliefs_sourced``, merged in where the pass left them)."""
    kept = f"({_SOCIAL} {matching}) ORDER BY root"
    rows = _rows(reader, f"{selected}root < 'believes:' AND {kept}", params)
    rows += _rows(reader, f"{selected}root >= 'believes;' AND {kept}", params)
    sourced = _rows(reader, f"{selected}{_SOURCED} AND {_NOT_BELIEVES} ORDER BY root", params)
    seen = {r[1] for r in rows}
    apart = [r for r in sourced if r[1] not in seen]
    return list(heapq.merge(rows, apart, key=lambda r: r[1])) if apart else rows


def told_groups(reader: Reader, world: str, resident: str) -> list[str | None]:
    """The place or person each rumour :func:`recall_social` held back with ``told=False``
    merges under (:func:`.items.group_of`; None: under none), read on the rows of
    :data:`_TOLD` (a range of ``beliefs_shown``, each row looked up): a merged line names
    its group and lists or counts its members, which bounds their lines from below where
    the counts alone cannot tell that none fits (:func:`.packing.least_line`)."""
    from .items import group_of  # items reads this module's records

    rows = _rows(
        reader,
        "SELECT root, people, places FROM beliefs "
        f"WHERE world = :world AND resident = :resident AND {_TOLD}",
        {"world": world, "resident": resident},
    )
    return [group_of("told", r[0], resident, stored_ids(r[1]), stored_ids(r[2])) for r in rows]


def told_ceiling(reader: Reader, world: str, resident: str, today: float) -> Cut | None:
    """How many rumours :func:`recall_social` held back with ``told=False`` (``read``, their
    number) and the best unrounded score among them (all rank in tier 4 without a focus);
    None when there are none. Counted and ranked on a range of ``beliefs_shown`` alone."""
    ((count, best),) = _rows(
        reader,
        f"SELECT count(*), max({_SCORE_SQL}) FROM beliefs "
        f"WHERE world = :world AND resident = :resident AND {_TOLD}",
        {"world": world, "resident": resident, "today": today},
    )
    return Cut(count, 4, best) if count else None
