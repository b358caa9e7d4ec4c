"""Credence wire protocol v1: codec, frame validation and error codes.

The contract itself is ``protocol/SPEC.md``; ``protocol/vectors/`` holds example frames as
msgpack hex beside their JSON form, for clients in other languages to test against.
"""

from .codec import (
    MAX_INBOUND,
    MAX_OUTBOUND,
    MAX_SAFE_INT,
    decode,
    decode_json,
    decode_msgpack,
    encode,
    encode_json,
    integral,
)
from .errors import CloseCode, ErrorCode, ProtocolError
from .frames import (
    EVIDENCE_REFS_SHOWN,
    MAX_LIMIT,
    PROTOCOL_VERSION,
    TAGS_SHOWN,
    BeliefsQuery,
    DistributionQuery,
    EventFrame,
    ExplainQuery,
    GraphQuery,
    Hello,
    NarrativeQuery,
    Subscribe,
    TrustQuery,
    Unsubscribe,
    belief_frame,
    belief_summary,
    change_summary,
    evidence_refs,
    parse_client_frame,
    parse_hello,
)
from .worlds import DeleteWorld, ForkWorld, WorldsQuery

__all__ = [
    "EVIDENCE_REFS_SHOWN",
    "MAX_INBOUND",
    "MAX_LIMIT",
    "MAX_OUTBOUND",
    "MAX_SAFE_INT",
    "PROTOCOL_VERSION",
    "TAGS_SHOWN",
    "BeliefsQuery",
    "CloseCode",
    "DeleteWorld",
    "DistributionQuery",
    "ErrorCode",
    "EventFrame",
    "ExplainQuery",
    "ForkWorld",
    "GraphQuery",
    "Hello",
    "NarrativeQuery",
    "ProtocolError",
    "Subscribe",
    "TrustQuery",
    "Unsubscribe",
    "WorldsQuery",
    "belief_frame",
    "belief_summary",
    "change_summary",
    "decode",
    "decode_json",
    "decode_msgpack",
    "encode",
    "encode_json",
    "evidence_refs",
    "integral",
    "parse_client_frame",
    "parse_hello",
]
