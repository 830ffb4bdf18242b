"""The client's reads, each routed to the worker that owns the session (see README.md)."""

from ctxstream.reads.context_reads import ContextReads

__all__ = ["ContextReads"]
