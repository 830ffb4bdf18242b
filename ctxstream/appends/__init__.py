"""What the client appends: events checked into records, fork and rewind records, the answers.

Every module but ``writer.py`` (the producer) is pure; see ``ctxstream/README.md``.
"""
