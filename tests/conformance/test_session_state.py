from __future__ import annotations

import pytest

from projections.conformance import actual_for
from tests.support.vectors import Vector, load_vectors, vector_id


@pytest.mark.parametrize("vector", load_vectors("session_state"), ids=vector_id)
def test_session_state_matches_adk(vector: Vector) -> None:
    assert actual_for(vector) == vector["expected"]
