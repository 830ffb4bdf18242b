"""ctxstream as google-adk's session service (and memory service): ``ctxstream/adk/README.md``.

The one package that imports ``google.adk`` (the ``adk`` extra); ``import ctxstream``
never needs it.
"""
