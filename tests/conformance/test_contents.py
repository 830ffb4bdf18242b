"""ADK's recorded contents vectors, replayed against the core."""

from __future__ import annotations

import pytest

from projections.conformance import actual_for
from tests.support.vectors import Vector, load_vectors, vector_id


@pytest.mark.parametrize("vector", load_vectors("contents"), ids=vector_id)
def test_contents_matches_adk(vector: Vector) -> None:
    assert actual_for(vector) == vector["expected"]
