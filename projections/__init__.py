"""The pure core: ADK's context management as pure functions (projections/README.md)."""
