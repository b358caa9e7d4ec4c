"""The sans-I/O belief engine: evidence in, (new belief, change records) out.

No sockets, no SQLite, no wall clock, no randomness. The rules live in :mod:`.rules`.
"""

from .events import ActStatus, EventKind, WorldEvent, action_root, parse_event
from .guard import REASONS, judge_edits
from .model import (
    Belief,
    Change,
    ChangeKind,
    Claim,
    ContractViolation,
    EngineError,
    Evidence,
    Intervention,
    InvalidEvent,
    InvalidEvidence,
    Relation,
    SourceKind,
    State,
    Value,
    same_value,
)
from .revise import age, revise
from .rules import DEFAULT_RULES, TRANSITIONS, Rules, check_transition
from .world import BeliefReader, MemoryWorld, Outcome, believes_root, derive_evidence, ingest

__all__ = [
    "DEFAULT_RULES",
    "REASONS",
    "TRANSITIONS",
    "ActStatus",
    "Belief",
    "BeliefReader",
    "Change",
    "ChangeKind",
    "Claim",
    "ContractViolation",
    "EngineError",
    "EventKind",
    "Evidence",
    "Intervention",
    "InvalidEvent",
    "InvalidEvidence",
    "MemoryWorld",
    "Outcome",
    "Relation",
    "Rules",
    "SourceKind",
    "State",
    "Value",
    "WorldEvent",
    "action_root",
    "age",
    "believes_root",
    "check_transition",
    "derive_evidence",
    "ingest",
    "judge_edits",
    "parse_event",
    "revise",
    "same_value",
]
