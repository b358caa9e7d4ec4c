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

from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..engine import SourceKind, Value
from .items import Item
from .own_words import said_lines
from .recall import Recall
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
    names = {r: registry.name(r, words.lang) for r in registry.names}
    names[resident] = words.self_name
    own = sorted(registry.all_names(resident), key=lambda n: (-len(n), n))
    return replace(
        words,
        names=names,
        self_names=tuple(n for n in own if n),
        root_texts=recalled.root_texts,
        actions={a: registry.action(a, words.lang) for a in registry.actions},
    )


def _value_text(value: Value | None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def clip_text(text: str, clip: int | None) -> str:
    """``text`` cut to ``clip`` characters, an ellipsis marking the cut."""
    if clip is None or len(text) <= clip:
        return text
    return text[: max(1, clip - 1)].rstrip() + "…"


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


def _influencing(item: Item, words: Words, s: str) -> str:
    template = {
        "sure": words.sure,
        "think": words.think,
        "unsure": words.unsure,
        "implanted": words.implanted,
        "heard": words.told,
    }[item.band]
    return template.format(s=s, who=_who(item, words))


def _contested(item: Item, words: Words, s: str, clip: int | None) -> str:
    b, counter = item.belief, item.counter
    c = (
        ""
        if counter is None
        else clip_text(
            words.first_person(_clean(counter.subject, b.root, counter.value, words)), clip
        )
    )
    seen = counter is not None and counter.source_kind == SourceKind.FIRSTHAND
    c_who = words.who([counter.source]) if counter is not None and counter.source else ""
    if item.section == "anomalies":
        if counter is None:
            return words.anomaly.format(s=s)
        template = words.anomaly_seen if seen else words.anomaly_told
        return template.format(s=s, c=c, who=c_who)
    if b.source_kind is SourceKind.HEARSAY:
        head = words.doubt_told.format(s=s, who=_who(item, words))
    elif b.source_kind is SourceKind.IMPLANTED:
        head = words.doubt_implanted.format(s=s)
    else:
        head = words.doubt.format(s=s)
    if counter is None:
        return head + words.stop
    tail = words.otherwise_seen if seen else words.otherwise_told
    return head + tail.format(c=c, who=c_who)


def _before(item: Item, words: Words, clip: int | None) -> str | None:
    corr = item.correction
    if corr is None or (corr.subject_before is None and corr.value_before is None):
        return None
    text = _clean(corr.subject_before, item.belief.root, corr.value_before, words)
    return clip_text(words.first_person(text), clip)


def _prior_told(item: Item, words: Words) -> str | None:
    corr = item.correction
    if corr is None or corr.prior_source_kind != SourceKind.HEARSAY or not corr.prior_source:
        return None
    return words.who([corr.prior_source])


def full_line(item: Item, words: Words, clip: int | None = None) -> str:
    """The sentence for one belief, its subject (and quoted ones) cut to ``clip``."""
    b = item.belief
    s = clip_text(words.first_person(_clean(b.subject, b.root, b.value, words)), clip)
    if item.section in ("doubts", "anomalies"):
        return _contested(item, words, s, clip)
    if item.section == "corrections":
        x = _before(item, words, clip)
        if x is None:
            return words.corrected_unknown.format(s=s)
        who = _prior_told(item, words)
        did = words.own(s)  # "until I drew a bucket", not "until I saw I drew a bucket"
        if who:
            return (words.corrected_told_did if did else words.corrected_told).format(
                x=x, y=s, who=who
            )
        return (words.corrected_did if did else words.corrected).format(x=x, y=s)
    if item.section == "faded":
        told = b.source_kind is SourceKind.HEARSAY
        return (words.faded_told if told else words.faded).format(s=s)
    return _influencing(item, words, s)


def compact_line(item: Item, words: Words, clip: int | None = None) -> str:
    """The short form: the section heading (or merge line) carries the rest of the meaning.

    Hearsay keeps its source in every form, so even the shortest line never reads as seen.
    """
    b = item.belief
    s = clip_text(words.first_person(_clean(b.subject, b.root, b.value, words)), clip)
    section, band = item.section, item.band
    told = b.source_kind is SourceKind.HEARSAY
    if section == "corrections":
        x = _before(item, words, clip)
        return s if x is None else words.c_corrected.format(x=x, y=s)
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


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _act_line(item: Item, words: Words, today: float) -> str:
    """ "I fetched water 20 times, most recently yesterday. Today, my attempt to fetch
    water was refused." (the episodes of one actor and action)."""
    assert item.acts is not None
    acts = item.acts
    mine = acts.actor == item.belief.resident
    who = words.self_name if mine else words.name(acts.actor)
    whose = words.self_whose if mine else words.whose.format(who=words.name(acts.actor))
    label = words.action_label(acts.action)
    done, failed = acts.done, acts.failed
    parts = []
    if done:
        template = words.act_done_one if len(done) == 1 else words.act_done_many
        parts.append(
            template.format(
                Who=_cap(who),
                did=words.past(label),
                n=len(done),
                when=words.when(done[-1].day, today),
            )
        )
    if failed:
        last = failed[-1]
        parts.append(
            words.act_failed.format(
                When=_cap(words.when(last.day, today)),
                whose=whose,
                act=label,
                status=words.act_status[last.status],
            )
        )
    return (" " if words.lang == "en" else "").join(parts)


def _trust_lines(item: Item, words: Words) -> tuple[str, str]:
    """The full trust line (with the reason behind its latest move) and the bare one."""
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
        x = " ".join(reason["told"].split()).rstrip(".。")
        y = " ".join((reason["seen"] or "").split()).rstrip(".。")
        x = clip_text(words.first_person(x), REASON_SUBJECT)
        y = clip_text(words.first_person(y), REASON_SUBJECT)
        said = words.trust_right if reason["change"] == "confirmed" else words.trust_wrong
        return text + said.format(who=who, x=x, y=y) + words.stop, text + words.stop
    return text + words.stop, text + words.stop


@dataclass(frozen=True, slots=True)
class Phrased:
    """A ranked item and its wording: what the packer lays out."""

    item: Item
    words: Words
    #: The full and compact line of an act or trust item (worded once), else None.
    fixed: tuple[str, str] | None = None

    @property
    def section(self) -> str:
        return self.item.section

    @property
    def key(self) -> tuple[int, float, float, str]:
        return self.item.key

    @property
    def group(self) -> str | None:
        return self.item.group

    @property
    def protected(self) -> bool:
        return self.item.protected

    def full(self, clip: int | None = None) -> str:
        """The sentence, its subject (and quoted ones) cut to ``clip``."""
        return self.fixed[0] if self.fixed else full_line(self.item, self.words, clip)

    def compact(self, clip: int | None = None) -> str:
        """The short form, its subjects cut to ``clip``."""
        return self.fixed[1] if self.fixed else compact_line(self.item, self.words, clip)


def phrase(items: Iterable[Item], words: Words, today: float) -> list[Phrased]:
    """Each item with its wording, in the same order."""
    out = []
    for item in items:
        fixed: tuple[str, str] | None = None
        if item.acts is not None:
            text = _act_line(item, words, today)
            fixed = (text, text)
        elif item.trust is not None:
            fixed = _trust_lines(item, words)
        elif item.said is not None:  # own words: sidecar/read/own_words.py
            fixed = said_lines(item.said, words, today)
        out.append(Phrased(item, words, fixed))
    return out
