"""The live view: what a session's future can still need of its history (README.md here)."""
