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
    ClockBackwards,
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
from .rules import (
    DEFAULT_RULES,
    RULES_VERSION,
    TRANSITIONS,
    Rules,
    RulesError,
    check_transition,
    rules_from_mapping,
    rules_from_stored,
    rules_to_stored,
)
from .world import BeliefReader, MemoryWorld, Outcome, believes_root, derive_evidence, ingest

__all__ = [
    "DEFAULT_RULES",
    "REASONS",
    "RULES_VERSION",
    "TRANSITIONS",
    "ActStatus",
    "Belief",
    "BeliefReader",
    "Change",
    "ChangeKind",
    "Claim",
    "ClockBackwards",
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
    "RulesError",
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
    "rules_from_mapping",
    "rules_from_stored",
    "rules_to_stored",
    "same_value",
]
