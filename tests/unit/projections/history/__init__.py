"""Tests of projections/history: the status of each record of a session."""
