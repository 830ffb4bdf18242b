"""Contents assembly: the request modes build_contents accepts."""

from __future__ import annotations

from typing import Any, cast

import pytest

from projections.contents.assembly import ContentsRequest, build_contents
from tests.support.events import text_event


def test_an_unknown_include_contents_mode_is_refused_naming_it() -> None:
    # The type allows "default" and "none" only; a caller that bypasses it must not get a
    # silent empty answer.
    request = ContentsRequest(include_contents=cast(Any, "everything"))
    with pytest.raises(AssertionError, match="'everything'"):
        build_contents([text_event("e1", "i1", 100.0)], request)
