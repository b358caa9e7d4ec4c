"""Stage 4 of the narrative: word each ranked item, in the narrative's language.

:func:`narrative_words` fills the language's templates (:mod:`.wording`) with what was
recalled: the registry's display names, the resident as "I", the root schema's display
text. :func:`phrase` turns each ranked item into a :class:`Phrased`: its full sentence, used
when there is room, and its compact form, used in merged lines and under tight budgets, both
for any ``clip`` (the most characters of any one subject to keep), so the packer
(:mod:`.packing`) can shorten contested beliefs instead of dropping them. An act episode or
a trust line is worded once, whatever the clip.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace

from ..engine import SourceKind, Value
from ..engine.texts import text_in
from .items import Item
from .own_words import said_lines
from .recall import Recall
from .registry import Names
from .wording import Words, words_for

__all__ = [
    "KIND_CLIP",
    "REASON_SUBJECT",
    "Phrased",
    "clip_text",
    "compact_line",
    "full_line",
    "narrative_words",
    "phrase",
]

#: Longest a root's declared display text (root schema) is kept where it names a claim.
KIND_CLIP = 60
#: Longest quoted subject in a trust reason.
REASON_SUBJECT = 120


def narrative_words(lang: str, recalled: Recall) -> Words:
    """The ``lang`` templates with the registry's names in that language, the resident as
    "I" (and its own names read in the first person), and the root schema's display text."""
    words = words_for(lang)
    registry, resident = recalled.registry, recalled.resident
    own = sorted(registry.all_names(resident), key=lambda n: (-len(n), n))
    return replace(
        words,
        names=Names(registry, words.lang, resident, words.self_name),
        self_names=tuple(n for n in own if n),
        root_texts=recalled.root_texts,
        actions={a: registry.action(a, words.lang) for a in registry.actions},
    )


def _value_text(value: Value | None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def clip_text(text: str, clip: int | None) -> str:
    """``text`` cut to ``clip`` characters at a word (never inside one), an ellipsis
    marking the cut; text without spaces (zh-Hant) is cut between characters."""
    if clip is None or len(text) <= clip:
        return text
    head = text[: max(1, clip - 1)]
    if " " in head and text[len(head)] != " ":
        head = head.rsplit(" ", 1)[0]
    return head.rstrip(" ,;:") + "…"


#: English words a game's subject may start with that are no proper names: inside a sentence
#: they lose their capital ("Bo told me that the well is poisoned", not "... that The well").
_LOWER_FIRST = frozenset(
    [
        "the",
        "a",
        "an",
        "this",
        "that",
        "these",
        "those",
        "there",
        "it",
        "its",
        "my",
        "his",
        "her",
        "their",
        "our",
        "your",
        "some",
        "someone",
        "somebody",
        "something",
        "everyone",
        "everybody",
        "everything",
        "nobody",
        "nothing",
        "no",
        "all",
        "every",
        "each",
        "one",
        "when",
        "while",
        "if",
        "after",
        "before",
    ]
)
#: Root segments that make a claim an event on a day (its value is the day).
_EVENT_DAY_SEGMENTS = frozenset({"day", "date", "when"})
_PRESENT = re.compile(r"\b(is|are|will be)\b")
_PAST = {"is": "was", "are": "were", "will be": "was"}


def _embedded(text: str, words: Words) -> str:
    """The game's subject as it reads inside a sentence: no stray capital."""
    if words.lang != "en" or not text[:1].isupper():
        return text
    first = text.split(" ", 1)[0]
    if first.casefold() in _LOWER_FIRST and (len(first) == 1 or first[1:].islower()):
        return first[:1].lower() + text[1:]
    return text


def event_past(root: str, value: Value | None, today: float) -> bool:
    """Whether a claim is an event whose day is before today: its root's last segment is
    ``day``, ``date`` or ``when`` and its value a whole day number below the world's."""
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and root.rsplit(":", 1)[-1] in _EVENT_DAY_SEGMENTS
        and value < int(today)
    )


def _in_past(text: str, words: Words) -> str:
    """An event's subject put in the past ("is on day 20" → "was on day 20"), or marked."""
    if words.lang == "en":
        found = _PRESENT.search(text)
        if found is not None:
            return text[: found.start()] + _PAST[found.group(1)] + text[found.end() :]
    return words.past_event.format(s=text)


def subject_text(
    subject: str | None,
    root: str,
    value: Value | None,
    words: Words,
    clip: int | None = None,
    today: float | None = None,
) -> str:
    """A stored subject as a sentence embeds it: in the narrative's language (else the
    other), in the first person, without a stray capital, an event now past in the past
    (``today`` given), cut to ``clip`` at a word."""
    text = words.first_person(_clean(text_in(subject, words.lang), root, value, words))
    if today is not None and event_past(root, value, today):
        text = _in_past(text, words)
    return clip_text(_embedded(text, words), clip)


def _clean(subject: str | None, root: str, value: Value | None, words: Words) -> str:
    """One line of text, without the sentence's own full stop (the template adds one).

    Without a subject, the root is named by the schema's display text when one is declared.
    """
    text = " ".join((subject or "").split()).rstrip(".。")
    if text:
        return text
    kind = words.kind(root)
    named = root if kind is None else clip_text(" ".join(kind.split()), KIND_CLIP)
    return f"{named}: {_value_text(value)}"


def _who(item: Item, words: Words) -> str:
    b = item.belief
    names = list(b.heard_from) or ([b.source_resident_id] if b.source_resident_id else [])
    return words.who(names)


def _tellers(item: Item, words: Words, fallback: str | None = None) -> tuple[str, str]:
    """Who told it, grouped by origin: ("Bo and Lena", ", and Old Tom repeated it")."""
    src = item.sources
    named = list(item.belief.heard_from) or ([fallback] if fallback else [])
    if src is None or not src.tellers:
        return words.who(named), ""
    firsts = [first for first, _ in src.tellers]
    repeats = [r for _, rest in src.tellers for r in rest]
    told = {*firsts, *repeats}
    firsts += [n for n in named if n not in told]
    again = words.repeated.format(who=words.who(repeats)) if repeats else ""
    return words.who(firsts), again


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _interpreted(item: Item, words: Words) -> str:
    """ " I think he did it on purpose." for a firsthand memory the resident read into."""
    b = item.belief
    if not b.interpretation or b.source_kind is not SourceKind.FIRSTHAND:
        return ""
    text = " ".join(text_in(b.interpretation, words.lang).split()).rstrip(".。")
    return words.interpreted.format(i=_embedded(words.first_person(text), words)) if text else ""


def _influencing(item: Item, words: Words, s: str) -> str:
    template = {
        "sure": words.sure,
        "think": words.think,
        "unsure": words.unsure,
        "implanted": words.implanted,
        "heard": words.told,
    }[item.band]
    who, again = _tellers(item, words, item.belief.source_resident_id)
    text = template.format(s=s, who=who, Who=_cap(who) if words.lang == "en" else who, rep=again)
    unconfirmed = item.band == "heard" and item.section != "told"  # else the heading says so
    dated = words.dated_unconfirmed if unconfirmed else words.dated
    text += dated.format(d=int(item.belief.formed_day))
    return text + words.stop + _interpreted(item, words)


def _first_doubt(
    item: Item,
    words: Words,
    today: float,
    settled: str | None,
    same: str | None = None,
    settled_day: float | None = None,
) -> str:
    """ " I first doubted it on day 7, when I saw ..." unless that is what ``settled`` it
    (the event), or just " I first doubted it on day 7." when it said the ``same``."""
    found = None if item.sources is None else item.sources.first_doubt
    if found is None or found.event_id == settled:
        return ""
    d = subject_text(found.subject, item.belief.root, None, words, REASON_SUBJECT)
    when = words.when(found.day, today)
    if d == same:
        if settled_day is not None and int(found.day) == int(settled_day):
            return ""  # "... the lamp is off today. I first doubted it today." says nothing
        return words.first_doubt_same.format(when=when)
    if found.source_kind == SourceKind.FIRSTHAND:
        return words.first_doubt_seen.format(when=when, d=d)
    return words.first_doubt_told.format(when=when, d=d, who=words.who([found.source or ""]))


def _contested(item: Item, words: Words, s: str, clip: int | None, today: float) -> str:
    b, counter = item.belief, item.counter
    c = "" if counter is None else subject_text(counter.subject, b.root, counter.value, words, clip)
    seen = counter is not None and counter.source_kind == SourceKind.FIRSTHAND
    c_who = words.who([counter.source]) if counter is not None and counter.source else ""
    if item.section == "anomalies":
        if counter is None:
            return words.anomaly.format(s=s)
        template = words.anomaly_seen if seen else words.anomaly_told
        return template.format(s=s, c=c, who=c_who)
    if b.source_kind is SourceKind.HEARSAY:
        head = words.doubt_told.format(s=s, who=_tellers(item, words)[0])
    elif b.source_kind is SourceKind.IMPLANTED:
        head = words.doubt_implanted.format(s=s)
    else:
        head = words.doubt.format(s=s)
    if counter is None:
        return head + words.stop + _first_doubt(item, words, today, None)
    tail = words.otherwise_seen if seen else words.otherwise_told
    doubted = _first_doubt(item, words, today, counter.event_id, c, counter.day)
    return head + tail.format(c=c, who=c_who) + doubted


def _before(item: Item, words: Words, clip: int | None) -> str | None:
    corr = item.correction
    if corr is None or (corr.subject_before is None and corr.value_before is None):
        return None
    return subject_text(corr.subject_before, item.belief.root, corr.value_before, words, clip)


def _corrected(item: Item, words: Words, s: str, clip: int | None, today: float) -> str:
    """ "I used to think X (Bo had told me so, and Old Tom repeated it), until I saw Y on
    day 9. I first doubted it on day 7, ..."; an implanted memory keeps its origin."""
    corr = item.correction
    x = _before(item, words, clip)
    if corr is None or x is None:
        return words.corrected_unknown.format(s=s)
    did = words.own(s)  # "until I drew a bucket", not "until I saw I drew a bucket"
    when = words.when(corr.day, today)
    who, again = "", ""
    if corr.prior_source_kind == SourceKind.IMPLANTED:
        template = words.corrected_implanted_did if did else words.corrected_implanted
    elif corr.prior_source_kind == SourceKind.HEARSAY and corr.prior_source:
        who, again = _tellers(item, words, corr.prior_source)
        template = words.corrected_told_did if did else words.corrected_told
    else:
        template = words.corrected_did if did else words.corrected
    text = template.format(x=x, y=s, who=who, rep=again, when=when)
    return text + _first_doubt(item, words, today, corr.event_id, s, corr.day)


def full_line(item: Item, words: Words, clip: int | None = None, today: float = 0.0) -> str:
    """The sentence for one belief on day ``today``, its subject (and quoted ones) cut to
    ``clip``."""
    b = item.belief
    s = subject_text(b.subject, b.root, b.value, words, clip, today)
    if item.section in ("doubts", "anomalies"):
        return _contested(item, words, s, clip, today)
    if item.section == "corrections":
        return _corrected(item, words, s, clip, today)
    if item.section == "faded":
        told = b.source_kind is SourceKind.HEARSAY
        return (words.faded_told if told else words.faded).format(s=s)
    return _influencing(item, words, s)


def compact_line(item: Item, words: Words, clip: int | None = None, today: float = 0.0) -> str:
    """The short form: the section heading (or merge line) carries the rest of the meaning.

    Hearsay keeps its source in every form, so even the shortest line never reads as seen.
    """
    b = item.belief
    s = subject_text(b.subject, b.root, b.value, words, clip, today)
    section, band = item.section, item.band
    told = b.source_kind is SourceKind.HEARSAY
    if section == "corrections":
        x = _before(item, words, clip)
        corr = item.correction
        implanted = corr is not None and corr.prior_source_kind == SourceKind.IMPLANTED
        if words.own(s):  # "then I drew a bucket", not "then saw I drew a bucket"
            template = words.c_corrected_implanted_did if implanted else words.c_corrected_did
        else:
            template = words.c_corrected_implanted if implanted else words.c_corrected
        return s if x is None else template.format(x=x, y=s)
    if section == "faded":
        return (words.c_faded_told if told else words.c_faded).format(s=s)
    if told:
        plain = section in ("told", "doubts", "anomalies")  # the heading already says so
        template = words.c_told if plain else words.c_told_unconfirmed
        return template.format(s=s, who=_who(item, words))
    if section in ("doubts", "anomalies"):
        return s
    return {
        "sure": "{s}",
        "think": words.c_think,
        "unsure": words.c_unsure,
        "implanted": words.c_implanted,
    }[band].format(s=s)


def _act_line(item: Item, words: Words, today: float) -> str:
    """ "I fetched water 20 times, most recently yesterday. Today, my attempt to fetch
    water was refused." (the episodes of one actor and action)."""
    assert item.acts is not None
    acts = item.acts
    mine = acts.actor == item.belief.resident
    who = words.self_name if mine else words.name(acts.actor)
    whose = words.self_whose if mine else words.whose.format(who=words.name(acts.actor))
    label = words.action_label(acts.action)
    done, failed = acts.done, acts.history.last_failed
    parts = []
    if done:
        assert acts.history.last_done is not None
        split = words.split(label)
        if split is None:
            template = words.act_done_one if done == 1 else words.act_done_many
        else:  # a count between verb and object: 「我打了25次水」
            template = words.act_done_one_vo if done == 1 else words.act_done_many_vo
        v, o = split or ("", "")
        parts.append(
            template.format(
                Who=_cap(who) if words.lang == "en" else who,
                did=words.past(label),
                v=v,
                o=o,
                n=done,
                when=words.when(acts.history.last_done.day, today),
            )
        )
    if failed is not None:
        last = failed
        reason = " ".join(text_in(last.reason, words.lang).split()).rstrip(".。")
        reason = _embedded(words.first_person(reason), words) if reason else ""
        parts.append(
            words.act_failed.format(
                When=_cap(words.when(last.day, today)),
                whose=whose,
                act=label,
                status=words.act_status[last.status],
                why=words.act_reason.format(r=clip_text(reason, REASON_SUBJECT)) if reason else "",
            )
        )
    return (" " if words.lang == "en" else "").join(parts)


def _trust_lines(item: Item, words: Words, settled: frozenset[str]) -> tuple[str, str]:
    """The full trust line (with the reason behind its latest move) and the bare one. When
    the belief it was about has its own correction or doubt line (``settled``), that line
    says what was seen: the trust line does not repeat the pair."""
    assert item.trust is not None
    trust = item.trust
    source = trust.record.source
    who = words.name(source)
    template = {"high": words.trust_high, "low": words.trust_low, "mid": words.trust_mid}
    text = template[trust.band].format(who=who)
    if trust.topics:
        text += words.trust_on.format(t=words.who(list(trust.topics)))
    reason = trust.record.reason
    if reason is not None and reason["told"]:
        root = reason.get("root") or ""
        x = subject_text(reason["told"], root, None, words, REASON_SUBJECT)
        y = subject_text(reason["seen"] or "", root, None, words, REASON_SUBJECT)
        said = words.trust_right if reason["change"] == "confirmed" else words.trust_wrong
        if reason["change"] != "confirmed" and root in settled:
            said = words.trust_false
        return text + said.format(who=who, x=x, y=y) + words.stop, text + words.stop
    return text + words.stop, text + words.stop


class Phrased:
    """A ranked item and its wording: what the packer lays out.

    An act, trust, own-words, promise or goal item is worded by its own function (its full
    and compact line at once), and only when the packer first asks for either: a long game's
    narrative holds a couple of hundred such items and words a handful."""

    __slots__ = (
        "_fixed",
        "_worder",
        "group",
        "item",
        "key",
        "protected",
        "section",
        "today",
        "words",
    )

    def __init__(
        self,
        item: Item,
        words: Words,
        worder: Callable[[], tuple[str, str]] | None = None,
        today: float = 0.0,
    ) -> None:
        self.item = item
        # The item's place, read on every pass of the packer (thousands of items, several
        # passes each): copied once, as the frozen item never changes.
        self.section: str = item.section
        self.key: tuple[int, float, float, str] = item.key
        self.group: str | None = item.group
        self.protected: bool = item.protected
        self.words = words
        #: The world's day (past events and day phrases are worded for it).
        self.today = today
        self._worder = worder
        self._fixed: tuple[str, str] | None = None

    def _lines(self) -> tuple[str, str] | None:
        """The full and compact line of an item worded by its own function (worded on the
        first call), else None."""
        if self._fixed is None and self._worder is not None:
            self._fixed = self._worder()
        return self._fixed

    def full(self, clip: int | None = None) -> str:
        """The sentence, its subject (and quoted ones) cut to ``clip``."""
        fixed = self._lines()
        return fixed[0] if fixed else full_line(self.item, self.words, clip, self.today)

    def compact(self, clip: int | None = None) -> str:
        """The short form, its subjects cut to ``clip``."""
        fixed = self._lines()
        return fixed[1] if fixed else compact_line(self.item, self.words, clip, self.today)


def _worder(
    item: Item, words: Words, today: float, settled: frozenset[str]
) -> Callable[[], tuple[str, str]] | None:
    """How an item worded by its own function gets its two lines (None: a belief's lines)."""
    if item.acts is not None:

        def act() -> tuple[str, str]:
            text = _act_line(item, words, today)
            return text, text

        return act
    if item.trust is not None:
        return lambda: _trust_lines(item, words, settled)
    if item.said is not None:  # own words: sidecar/read/own_words.py
        said = item.said
        return lambda: said_lines(said, words, today)
    if item.lines is not None:  # a promise or goal (sidecar/read/promises.py)
        lines = item.lines
        return lambda: lines(words, today)
    return None


def phrase(items: Iterable[Item], words: Words, today: float) -> list[Phrased]:
    """Each item with its wording, in the same order (worded when the packer asks)."""
    items = list(items)
    settled = frozenset(
        i.belief.root for i in items if i.section in ("corrections", "doubts", "anomalies")
    )
    return [Phrased(item, words, _worder(item, words, today, settled), today) for item in items]
