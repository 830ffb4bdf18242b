"""The module-level faust app, for faust's own command line.

``faust -A streams.faust_engine.app worker -l info`` runs the projector on the faust
engine, as ``ctxstream worker --engine faust`` does, with settings from the
``CTXSTREAM_*`` environment.
The one module that builds objects at import (nothing connects until the
worker starts).
"""

from __future__ import annotations

from streams.faust_engine.projector import build_projector
from streams.projector_settings import ProjectorSettings

settings = ProjectorSettings()
heap = settings.heap_policy()
heap.start()  # as ``ctxstream worker`` does
projector = build_projector(settings, heap)
app = projector.app
