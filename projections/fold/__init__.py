"""The fold: a session's records folded into its projection, and reads of its past."""
