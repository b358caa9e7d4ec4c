"""Sentence templates for the narrative, one table per language.

The wording is where the epistemic state lives: a game pastes the text into an NPC's prompt,
and the model can only keep "I saw" apart from "Bob told me" if the text does. So every
template is fixed per (section, source kind, band), and no template used for hearsay or an
implanted memory claims the resident saw anything. Templates take ``{s}`` (the belief's
subject), ``{who}`` (the people it was heard from), ``{c}`` (the contradicting subject),
``{x}``/``{y}`` (a correction's before/after), ``{k}`` (a merge key) and ``{n}`` (a count).
Adding a language means adding one :class:`Words` to :data:`LANGUAGES`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = ["LANGUAGES", "SECTIONS", "Words", "words_for"]

#: Most people one line names; the rest are counted ("A, B, C, D, E and 12 others").
NAMES_SHOWN = 5

#: Section names in the order they appear in the text.
SECTIONS = (
    "sure", "believe", "told", "said", "acts", "doubts", "anomalies", "corrections", "owe",
    "goals", "people", "faded",
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Words:
    """Every string the narrative may contain in one language."""

    lang: str
    headings: dict[str, str]
    #: Used instead of ``headings`` when even contested beliefs must be shortened.
    short_headings: dict[str, str]
    # influencing beliefs, by band
    sure: str
    think: str
    unsure: str
    implanted: str
    told: str
    #: "{who}" repeated what an earlier teller said (a telling of the same origin).
    repeated: str
    #: The day a memory is from, inside a line ("(day 12)"), and with "unconfirmed".
    dated: str
    dated_unconfirmed: str
    #: The resident's own reading of what it saw (a stored interpretation).
    interpreted: str
    # contested
    doubt: str
    doubt_told: str
    doubt_implanted: str
    otherwise_seen: str
    otherwise_told: str
    anomaly: str
    anomaly_seen: str
    anomaly_told: str
    # corrected
    corrected: str
    corrected_told: str
    corrected_unknown: str
    #: corrections whose new subject is the resident's own doing ("until I drew a bucket")
    corrected_did: str
    corrected_told_did: str
    #: corrections of a memory the player implanted: it keeps its origin
    corrected_implanted: str
    corrected_implanted_did: str
    #: what first made me doubt it, when that was not what settled it
    first_doubt_seen: str
    first_doubt_told: str
    #: what first made me doubt it said the same as what settled it
    first_doubt_same: str
    #: an event-like claim whose day is past, when the subject cannot be put in the past
    past_event: str
    # past
    faded_told: str
    faded: str
    # compact forms (merged lines and tight budgets); "{s}" alone is the sure band
    c_think: str
    c_unsure: str
    c_implanted: str
    c_told: str
    c_told_unconfirmed: str
    c_faded_told: str
    c_faded: str
    c_corrected: str
    #: the compact form of a corrected implanted memory: it keeps its origin too
    c_corrected_implanted: str
    #: compact corrections whose new subject is the resident's own doing ("then I drew...")
    c_corrected_did: str
    c_corrected_implanted_did: str
    # structure
    merged: str
    merge_sep: str
    merge_more: str
    # counts, as (one, many) pairs
    omitted_note: tuple[str, str]
    more_doubts: tuple[str, str]
    more_anomalies: tuple[str, str]
    more_corrections: tuple[str, str]
    all_doubts: tuple[str, str]
    all_anomalies: tuple[str, str]
    all_corrections: tuple[str, str]
    summary_doubts: tuple[str, str]
    summary_anomalies: tuple[str, str]
    summary_corrections: tuple[str, str]
    summary_join: str
    summary_end: str
    empty: str
    and_: str
    list_sep: str
    #: the rest of a long list of names, counted (``who``: "A, B, C, D, E and 12 others")
    others: str
    stop: str
    # bulk similar facts, in one line
    bulk: str
    c_bulk: str
    # acts (episodes): {who} the actor's name or the self word, {whose} its possessive,
    # {did} the action in the past, {act} its label, {when} a day phrase, {n} a count
    self_name: str
    self_whose: str
    whose: str
    act_done_one: str
    act_done_many: str
    act_failed: str
    #: the game's reason for a failed act, after its status
    act_reason: str
    #: verb–object forms of a count (「打了25次水」), for labels :attr:`split` can divide
    act_done_one_vo: str
    act_done_many_vo: str
    act_status: dict[str, str]
    today: str
    yesterday: str
    on_day: str
    #: A time of day after a day phrase, when the game's day has a fraction.
    at_time: str
    past: Callable[[str], str]
    #: An action label as (verb, object) where the language counts between them, else None.
    split: Callable[[str], tuple[str, str] | None]
    # trust ("people"): {who} the source's name, {x} what they told me, {y} what I saw
    trust_high: str
    trust_mid: str
    trust_low: str
    trust_on: str
    trust_wrong: str
    trust_right: str
    #: the reason when a correction line already says what was seen instead
    trust_false: str
    #: Display names of residents in this language (from the registry); ids stand in for
    #: residents without one. The narrative fills it per world with ``dataclasses.replace``.
    names: Mapping[str, str] = field(default_factory=dict)
    #: What the resident's own subjects may call it (its id and registered names, longest
    #: first): a subject starting with one reads in the first person ("I drew a bucket").
    self_names: tuple[str, ...] = ()
    #: Display text of the world's declared root prefixes in this language (from the root
    #: schema, ``(prefix, text)``): a root or root family is named by its longest match.
    root_texts: tuple[tuple[str, str], ...] = ()
    #: Labels of the game's action ids in this language (from the registry).
    actions: Mapping[str, str] = field(default_factory=dict)

    def action_label(self, action: str) -> str:
        """The label of ``action`` (its id, ``_`` as spaces, when the game gave none)."""
        return self.actions.get(action) or action.replace("_", " ")

    def kind(self, root: str) -> str | None:
        """The declared display text of the longest prefix ``root`` starts with, if any."""
        best: tuple[str, str] | None = None
        for prefix, text in self.root_texts:
            if root.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
                best = (prefix, text)
        return None if best is None else best[1]

    def first_person(self, text: str) -> str:
        """``text`` with the resident's own names in the first person: a leading name as
        "I"/"my" (我), one inside as "me"/"my" (我), so a resident never names itself."""
        return self._inner_self(self._leading_self(text))

    def _inner_self(self, text: str) -> str:
        for name in self.self_names:
            if self.lang == "en":
                if name.casefold() in text.casefold():
                    text = _self_pattern(name).sub(_me, text)
            elif not name.isascii() and name in text:
                text = text.replace(name, self.self_name)
        return text

    def _leading_self(self, text: str) -> str:
        for name in self.self_names:
            head = text[: len(name)]
            if self.lang == "en":
                if head.casefold() != name.casefold():
                    continue
                rest = text[len(name) :]
                if rest.startswith("'s "):
                    return "my" + rest[2:]
                if rest.startswith(" "):
                    return self.self_name + rest
            elif head == name and name.isascii() and text[len(name) : len(name) + 1] == " ":
                return self.self_name + text[len(name) + 1 :]  # "Mira drew…" → 我drew…
            elif head == name and len(text) > len(name) and not text[len(name)].isspace():
                rest = text[len(name) :]
                if rest.startswith("'s "):  # an English subject in a zh-Hant narrative
                    return self.self_name + "的" + rest[3:]  # Mira's bucket → 我的bucket
                return self.self_name + rest  # 米拉的繩子 → 我的繩子
        return text

    def own(self, text: str) -> bool:
        """Whether ``text`` (already in the first person) starts with the self word."""
        word = self.self_name
        return text.startswith(word + " ") if self.lang == "en" else text.startswith(word)

    def name(self, resident: str) -> str:
        """``resident``'s display name, or its id when the registry has none."""
        return self.names.get(resident, resident)

    def when(self, day: float, today: float) -> str:
        """ "today", "yesterday" or "on day 12" (days counted from the world clock), whole
        days only: a fraction of a day reads as a time of day ("on day 24 at 06:00")."""
        if int(today) - int(day) == 0:
            text = self.today
        elif int(today) - int(day) == 1:
            text = self.yesterday
        else:
            text = self.on_day.format(d=int(day))
        return text + self.time_of(day)

    def time_of(self, day: float) -> str:
        """ " at 06:00" for a day with a fraction, "" for a whole day."""
        minutes = round((day - int(day)) * 24 * 60)
        if minutes <= 0 or minutes >= 24 * 60:
            return ""
        return self.at_time.format(t=f"{minutes // 60:02d}:{minutes % 60:02d}")

    def who(self, names: Sequence[str]) -> str:
        """``A``, ``A and B``, ``A, B and C`` (``A、B和C``); past :data:`NAMES_SHOWN` + 1
        names, the first :data:`NAMES_SHOWN` and the rest counted ("and 12 others"), so a
        rumour half the town told stays a line an NPC can read and a budget can hold."""
        shown = [
            self.name(n) for n in names[: NAMES_SHOWN if len(names) > NAMES_SHOWN + 1 else None]
        ]
        if len(names) > len(shown):
            shown.append(self.others.format(n=len(names) - len(shown)))
        if len(shown) <= 1:
            return "".join(shown)
        return self.list_sep.join(shown[:-1]) + self.and_ + shown[-1]

    def omitted(self, n: int) -> str:
        """The closing note: how many memories the text leaves out."""
        return self.count(self.omitted_note, n)

    @staticmethod
    def count(forms: tuple[str, str], n: int) -> str:
        """``forms`` is (singular, plural); languages without plurals repeat one form."""
        return (forms[0] if n == 1 else forms[1]).format(n=n)


EN = Words(
    lang="en",
    headings={
        "sure": "What I am sure of:",
        "told": "What I was told (unconfirmed):",
        "doubts": "What I doubt:",
        "anomalies": "What struck me as wrong:",
        "corrections": "What I used to believe:",
        "owe": "What I owe and am owed:",
        "goals": "What I am trying to do:",
        "people": "How I see people:",
        "faded": "Faded memories:",
        "believe": "What I think:",
        "acts": "What I did and saw done:",
        "said": "What I told others:",
    },
    short_headings={
        "sure": "Sure:",
        "told": "Told (unconfirmed):",
        "doubts": "Doubts:",
        "anomalies": "Seems wrong:",
        "corrections": "Corrected:",
        "owe": "Promises:",
        "goals": "Goals:",
        "people": "People:",
        "faded": "Faded:",
        "believe": "I think:",
        "acts": "Done:",
        "said": "I told:",
    },
    sure="I'm sure that {s}",
    think="I think {s}",
    unsure="I'm not certain, but I think {s}",
    implanted="I somehow remember that {s}",
    told="{Who} told me that {s}{rep}",
    repeated=", and {who} repeated it",
    dated=" (day {d})",
    dated_unconfirmed=" (day {d}, unconfirmed)",
    interpreted=" I think {i}.",
    doubt="I doubt that {s}",
    doubt_told="I doubt what {who} told me: {s}",
    doubt_implanted="I doubt something I somehow remember: {s}",
    otherwise_seen=" (what I saw since says otherwise: {c}).",
    otherwise_told=" ({who} told me otherwise: {c}).",
    anomaly="Something about this strikes me as wrong: {s}.",
    anomaly_seen="Something strikes me as wrong: I remember that {s}, but I saw otherwise: {c}.",
    anomaly_told=(
        "Something strikes me as wrong: I remember that {s}, but {who} told me otherwise: {c}."
    ),
    corrected="I used to think {x}, until I saw {y} {when}.",
    corrected_told="I used to think {x} ({who} told me{rep}), until I saw {y} {when}.",
    corrected_unknown="I have changed my mind; now I know that {s}.",
    corrected_did="I used to think {x}, until {y} {when}.",
    corrected_told_did="I used to think {x} ({who} told me{rep}), until {y} {when}.",
    corrected_implanted="I somehow remembered that {x}, until I saw {y} {when}.",
    corrected_implanted_did="I somehow remembered that {x}, until {y} {when}.",
    first_doubt_seen=" I first doubted it {when}, when I saw {d}.",
    first_doubt_told=" I first doubted it {when}, when {who} told me {d}.",
    first_doubt_same=" I first doubted it {when}.",
    past_event="{s} (that day has passed)",
    faded_told="Someone once told me that {s}.",
    faded="I vaguely remember that {s}.",
    c_think="{s} (I think)",
    c_unsure="{s} (not sure)",
    c_implanted="{s} (I somehow remember)",
    c_told="{s} ({who} told me)",
    c_told_unconfirmed="{s} ({who} told me, unconfirmed)",
    c_faded_told="{s} (someone once told me)",
    c_faded="{s} (vaguely)",
    c_corrected="used to think {x}; then saw {y}",
    c_corrected_implanted="somehow remembered that {x}; then saw {y}",
    c_corrected_did="used to think {x}; then {y}",
    c_corrected_implanted_did="somehow remembered that {x}; then {y}",
    merged="About {k}: {items}.",
    merge_sep="; ",
    merge_more="; and {n} more",
    omitted_note=("(1 more memory left out)", "({n} more memories left out)"),
    more_doubts=("(and 1 more thing I doubt)", "(and {n} more things I doubt)"),
    more_anomalies=("(and 1 more thing that seems wrong)", "(and {n} more things that seem wrong)"),
    more_corrections=("(and 1 more corrected belief)", "(and {n} more corrected beliefs)"),
    all_doubts=("(1 thing I doubt, not spelled out)", "({n} things I doubt, too many to list)"),
    all_anomalies=(
        "(1 thing that seems wrong, not spelled out)",
        "({n} things that seem wrong, too many to list)",
    ),
    all_corrections=(
        "(1 corrected belief, not spelled out)",
        "({n} corrected beliefs, too many to list)",
    ),
    summary_doubts=("I doubt 1 thing", "I doubt {n} things"),
    summary_anomalies=("1 thing strikes me as wrong", "{n} things strike me as wrong"),
    summary_corrections=("I have corrected 1 belief", "I have corrected {n} beliefs"),
    summary_join="; ",
    summary_end=" — too many to list here.",
    empty="I don't remember anything in particular.",
    and_=" and ",
    list_sep=", ",
    others="{n} others",
    stop=".",
    bulk="I know of {n} things of this kind ({k}), for example: {s}.",
    c_bulk="{n} × {k}, e.g. {s}",
    self_name="I",
    self_whose="my",
    whose="{who}'s",
    act_done_one="{Who} {did} {when}.",
    act_done_many="{Who} {did} {n} times, last {when}.",
    act_failed="{When}, {whose} attempt to {act} {status}{why}.",
    act_reason=": {r}",
    act_done_one_vo="",
    act_done_many_vo="",
    act_status={
        "rejected": "was refused",
        "interrupted": "was interrupted",
        "replaced": "gave way to something else",
    },
    today="today",
    yesterday="yesterday",
    on_day="on day {d}",
    at_time=" at {t}",
    past=lambda label: _en_past(label),
    split=lambda label: None,
    trust_high="I trust {who}",
    trust_mid="I am not sure how far to trust {who}",
    trust_low="I distrust {who}",
    trust_on=" on {t}",
    trust_wrong=": {who} told me that {x}, but I saw otherwise ({y})",
    trust_right=": {who} told me that {x}, and I saw it was so",
    trust_false=": what {who} told me proved false",
)

ZH_HANT = Words(
    lang="zh-Hant",
    headings={
        "sure": "我確定的事：",
        "told": "聽別人說的事（未經證實）：",
        "doubts": "我開始懷疑的事：",
        "anomalies": "讓我覺得不對勁的事：",
        "corrections": "我以前相信、後來被糾正的事：",
        "owe": "我欠人的與別人欠我的承諾：",
        "goals": "我正在努力做的事：",
        "people": "我對身邊的人的看法：",
        "faded": "模糊的記憶：",
        "believe": "我認為、但不確定的事：",
        "acts": "我做過、也看到別人做過的事：",
        "said": "我告訴別人的事：",
    },
    short_headings={
        "sure": "確定：",
        "told": "聽說（未證實）：",
        "doubts": "懷疑：",
        "anomalies": "不對勁：",
        "corrections": "已糾正：",
        "owe": "承諾：",
        "goals": "目標：",
        "people": "對人的看法：",
        "faded": "模糊記憶：",
        "believe": "我認為：",
        "acts": "做過的事：",
        "said": "我說過：",
    },
    sure="我很確定{s}",
    think="我認為{s}",
    unsure="我不太確定，但我覺得{s}",
    implanted="不知怎的，我記得{s}",
    told="{Who}告訴我{s}{rep}",
    repeated="，{who}也轉述了",
    dated="（第{d}天）",
    dated_unconfirmed="（第{d}天，未經證實）",
    interpreted="我想{i}。",
    doubt="我開始懷疑{s}",
    doubt_told="我開始懷疑{who}告訴我的事：{s}",
    doubt_implanted="我開始懷疑一段不知從何而來的記憶：{s}",
    otherwise_seen="（我後來親眼看到的不是這樣：{c}）。",
    otherwise_told="（{who}跟我說的不一樣：{c}）。",
    anomaly="有件事讓我覺得不對勁：{s}。",
    anomaly_seen="有件事不對勁：我記得{s}，但我親眼看到的不是這樣：{c}。",
    anomaly_told="有件事不對勁：我記得{s}，但{who}跟我說的不一樣：{c}。",
    corrected="我以前以為{x}，直到{when}我親眼看到{y}。",
    corrected_told="我以前以為{x}（是{who}告訴我的{rep}），直到{when}我親眼看到{y}。",
    corrected_unknown="我改變了想法；現在我知道{s}。",
    corrected_did="我以前以為{x}，直到{when}{y}。",
    corrected_told_did="我以前以為{x}（是{who}告訴我的{rep}），直到{when}{y}。",
    corrected_implanted="我以前不知怎的記得{x}，直到{when}我親眼看到{y}。",
    corrected_implanted_did="我以前不知怎的記得{x}，直到{when}{y}。",
    first_doubt_seen="{when}我第一次開始懷疑：我親眼看到{d}。",
    first_doubt_told="{when}我第一次開始懷疑：{who}跟我說{d}。",
    first_doubt_same="{when}我就開始懷疑了。",
    past_event="{s}，那天已經過去了",
    faded_told="以前好像有人跟我說過{s}。",
    faded="我依稀記得{s}。",
    c_think="{s}（我認為）",
    c_unsure="{s}（不太確定）",
    c_implanted="{s}（不知怎的記得）",
    c_told="{s}（{who}說的）",
    c_told_unconfirmed="{s}（{who}說的，未經證實）",
    c_faded_told="{s}（以前有人說過）",
    c_faded="{s}（依稀記得）",
    c_corrected="以前以為{x}，後來親眼看到{y}",
    c_corrected_implanted="以前不知怎的記得{x}，後來親眼看到{y}",
    c_corrected_did="以前以為{x}，後來{y}",
    c_corrected_implanted_did="以前不知怎的記得{x}，後來{y}",
    merged="關於{k}：{items}。",
    merge_sep="；",
    merge_more="；還有{n}則",
    omitted_note=("（另有{n}則記憶未列出）",) * 2,
    more_doubts=("（另有{n}件我懷疑的事）",) * 2,
    more_anomalies=("（另有{n}件讓我覺得不對勁的事）",) * 2,
    more_corrections=("（另有{n}件我糾正過的看法）",) * 2,
    all_doubts=("（我懷疑的事有{n}件，無法一一列出）",) * 2,
    all_anomalies=("（讓我覺得不對勁的事有{n}件，無法一一列出）",) * 2,
    all_corrections=("（我糾正過的看法有{n}件，無法一一列出）",) * 2,
    summary_doubts=("我懷疑的事有{n}件",) * 2,
    summary_anomalies=("不對勁的事有{n}件",) * 2,
    summary_corrections=("糾正過的看法有{n}件",) * 2,
    summary_join="；",
    summary_end="（多到無法一一列出）。",
    empty="我沒有什麼特別的記憶。",
    and_="和",
    list_sep="、",
    others="另外{n}人",
    stop="。",
    bulk="我知道{n}件這類的事（{k}），例如：{s}。",
    c_bulk="{n}件{k}，例如{s}",
    self_name="我",
    self_whose="我",
    whose="{who}",
    act_done_one="{Who}{when}{did}了。",
    act_done_many="{Who}{did}了{n}次，最近一次是{when}。",
    act_failed="{When}{whose}想要{act}，但{status}{why}。",
    act_reason="：{r}",
    act_done_one_vo="{Who}{when}{v}了{o}。",
    act_done_many_vo="{Who}{v}了{n}次{o}，最近一次是{when}。",
    act_status={"rejected": "被拒絕了", "interrupted": "被打斷了", "replaced": "改做了別的事"},
    today="今天",
    yesterday="昨天",
    on_day="第{d}天",
    at_time="{t}",
    past=lambda label: label,
    split=lambda label: _zh_split(label),
    trust_high="我信任{who}",
    trust_mid="我不確定該多信任{who}",
    trust_low="我不信任{who}",
    trust_on="（在{t}方面）",
    trust_wrong="：{who}跟我說{x}，但我親眼看到的不是這樣（{y}）",
    trust_right="：{who}跟我說{x}，我親眼證實了",
    trust_false="：{who}跟我說的結果不是真的",
)

_IRREGULAR = {
    "be": "was", "become": "became", "begin": "began", "bring": "brought", "build": "built",
    "buy": "bought", "cut": "cut", "dig": "dug", "hit": "hit", "catch": "caught", "choose": "chose", "come": "came", "do": "did",
    "draw": "drew", "drink": "drank", "drive": "drove", "eat": "ate", "fall": "fell",
    "feed": "fed", "feel": "felt", "fight": "fought", "find": "found", "fly": "flew",
    "forget": "forgot", "get": "got", "give": "gave", "go": "went", "grow": "grew",
    "hang": "hung", "have": "had", "hear": "heard", "hide": "hid", "hold": "held",
    "keep": "kept", "know": "knew", "lead": "led", "leave": "left", "lend": "lent",
    "let": "let", "lie": "lay", "lose": "lost", "make": "made", "meet": "met", "pay": "paid",
    "put": "put", "read": "read", "ride": "rode", "ring": "rang", "rise": "rose", "run": "ran",
    "say": "said", "see": "saw", "sell": "sold", "send": "sent", "set": "set",
    "shoot": "shot", "shut": "shut", "sing": "sang", "sit": "sat", "sleep": "slept",
    "speak": "spoke", "spend": "spent", "stand": "stood", "steal": "stole", "sweep": "swept",
    "swim": "swam", "take": "took", "teach": "taught", "tell": "told", "think": "thought",
    "throw": "threw", "wake": "woke", "wear": "wore", "win": "won", "write": "wrote",
}  # fmt: skip


@lru_cache(maxsize=256)
def _self_pattern(name: str) -> re.Pattern[str]:
    """A resident's name as a whole word, with an optional possessive."""
    return re.compile(rf"(?<![\w']){re.escape(name)}('s)?(?!\w)", re.IGNORECASE)


def _me(match: re.Match[str]) -> str:
    return "my" if match.group(1) else "me"


#: Single-character verbs a zh-Hant action label may start with: 「打水」 is 打 + 水, so a count
#: goes between them (「打了25次水」). A label not starting with one is counted whole.
_ZH_VERBS = frozenset(
    "打挑提擔砍劈鋸種耕犁割收採摘撿拾掃擦洗煮燒烤蒸炒切磨餵養放趕牽騎修補縫織編蓋搭建挖"
    "釣捕抓殺買賣送借還寫讀念唱跳喝吃看做拿搬推拉開關守巡敲鎖點倒"
)


def _zh_split(label: str) -> tuple[str, str] | None:
    """ "打水" → ("打", "水"); None for a label that is not a one-character verb + object."""
    if len(label) >= 2 and label[0] in _ZH_VERBS and not label[1:].isascii():
        return label[0], label[1:]
    return None


def _en_past(label: str) -> str:
    """The simple past of an action label: its first word conjugated ("fetch water" →
    "fetched water", "go home" → "went home"); regular rules beyond the irregular table."""
    first, _, rest = label.partition(" ")
    lower = first.lower()
    if lower in _IRREGULAR:
        done = _IRREGULAR[lower]
    elif lower.endswith("e"):
        done = lower + "d"
    elif len(lower) > 1 and lower.endswith("y") and lower[-2] not in "aeiou":
        done = lower[:-1] + "ied"
    elif (
        len(lower) == 3 and lower[-1] not in "aeiouwxy" and lower[-2] in "aeiou"
        and lower[-3] not in "aeiou"
    ):  # fmt: skip
        done = lower + lower[-1] + "ed"  # "mop" → "mopped", "dig" is not regular anyway
    elif lower:
        done = lower + "ed"
    else:
        done = first
    return done + (" " + rest if rest else "")


LANGUAGES: dict[str, Words] = {w.lang: w for w in (EN, ZH_HANT)}


def words_for(lang: str) -> Words:
    """The table for ``lang``; an unknown language is a caller error, not a fallback."""
    try:
        return LANGUAGES[lang]
    except KeyError:
        raise ValueError(
            f"unknown narrative language {lang!r}; expected one of {', '.join(LANGUAGES)}"
        ) from None
