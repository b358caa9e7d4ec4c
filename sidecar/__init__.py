"""Credence: a realtime belief-revision sidecar for game NPCs."""

__version__ = "0.1.0"
