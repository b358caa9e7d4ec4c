"""The read side: narratives for the game's LLM, explanations and graphs for people.

Pure functions over what a :class:`~sidecar.store.Reader` returns; no sockets. The server's
query handlers and the ``credence narrative|explain|graph`` commands both call these.
"""

from .explain import explain, render_explain
from .graph import EDGE_TYPES, NODE_TYPES, graph, to_dot
from .narrative import MIN_BUDGET, Focus, Narrative, project
from .queries import NotFound

__all__ = [
    "EDGE_TYPES",
    "MIN_BUDGET",
    "NODE_TYPES",
    "Focus",
    "Narrative",
    "NotFound",
    "explain",
    "graph",
    "project",
    "render_explain",
    "to_dot",
]
