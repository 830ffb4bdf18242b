"""Compaction: triggers, window selection, the size gate, and when the projector compacts."""
