"""Test vectors of the Credence wire protocol (``vectors.json``) and their generator.

Run ``python -m protocol.vectors.generate`` to rewrite ``vectors.json``; ``--check`` only
compares. ``README.md`` beside this file explains how a client in another language uses them.
"""
