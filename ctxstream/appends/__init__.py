"""What the client appends: each event checked into its record, fork and rewind records, answers.

Every module here is pure (see README.md); :class:`ctxstream.Client` sends what they build.
"""
