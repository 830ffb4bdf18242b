"""Event history: the status the fold gives each record of a session, for rows that store it."""
