"""Own words: what a ``say`` or ``announce`` tells its speaker about itself.

A resident that speaks knows, firsthand, that it said something, to whom and when — whether
or not it believes it (a lie is still something it said). That record is not evidence: it
never becomes the speaker's belief and takes no part in any belief rule. It is derived from
the event alone (and, for an announcement to everyone, from the residents it reached, which
the engine works out for the hearers' evidence anyway).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .events import Announce, EventKind, Say, Utterance, WorldEvent
from .model import Claim

__all__ = ["SAID_TO_SHOWN", "Said", "own_words", "reached"]

#: A reply or narrative entry lists at most this many of the residents told (and counts them
#: all), so an announcement to a town of thousands stays one bounded entry.
SAID_TO_SHOWN = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class Said:
    """One thing a resident said: the claim as told, to whom, when.

    ``to`` is whom the speaker addressed: a ``say``'s listeners (not its overhearers, whom the
    speaker did not address), an announcement's audience, or — for an announcement to
    everyone (``everyone``) — every resident it reached, sorted.
    """

    speaker: str
    event_id: str
    day: float
    kind: EventKind
    claim: Claim
    subject: str
    to: tuple[str, ...]
    everyone: bool = False
    topic: str | None = None


def reached(event: Announce, known: Iterable[str]) -> tuple[str, ...]:
    """Whom an announcement reached: its audience, or everyone known but the speaker."""
    if event.audience is not None:
        return event.audience
    everyone = set(known) | set(event.mentioned_residents())
    everyone.discard(event.speaker)
    return tuple(sorted(everyone))


def own_words(event: WorldEvent, known: Iterable[str] = ()) -> Said | None:
    """The speaker's record of an utterance; ``None`` for any other event."""
    if not isinstance(event, Utterance):
        return None
    if isinstance(event, Say):
        to, everyone = event.listeners, False
    else:
        assert isinstance(event, Announce)
        to, everyone = reached(event, known), event.audience is None
    return Said(
        speaker=event.speaker,
        event_id=event.event_id,
        day=event.day,
        kind=event.kind,
        claim=event.claim,
        subject=event.subject,
        to=to,
        everyone=everyone,
        topic=event.topic,
    )
