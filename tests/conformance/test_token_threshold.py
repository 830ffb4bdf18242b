from __future__ import annotations

import pytest

from projections.conformance import actual_for
from tests.support.vectors import Vector, load_vectors, vector_id


@pytest.mark.parametrize("vector", load_vectors("token_threshold"), ids=vector_id)
def test_token_threshold_matches_adk(vector: Vector) -> None:
    assert actual_for(vector) == vector["expected"]
