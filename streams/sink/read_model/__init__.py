"""What the sink writes besides its rows' bytes: each row's status, and the memories it feeds.

``streams/sink/README.md``, "Statuses" and "Memories", has the design.
"""
