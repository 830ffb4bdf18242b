"""Replay the log into another target schema and switch the stable views to it.

``streams/sink/README.md``, "Replay and switch", has the design.
"""
