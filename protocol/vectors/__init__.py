"""Test vectors of the Credence wire protocol (``vectors.json``).

Run ``python -m tools.vectors`` (the generator, with the tools) to rewrite ``vectors.json``; ``--check`` only
compares. ``README.md`` beside this file explains how a client in another language uses them.
"""
