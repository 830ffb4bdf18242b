"""Retention and checkpoints: what a projection may release, and its bytes."""
