"""Long-term memory: what an event contributes to it (projections/memory/README.md)."""
