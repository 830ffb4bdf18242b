"""The delay before a retry: doubling from its base, bounded, or the delay the failure asked."""

from __future__ import annotations

import pytest

from summarizer_worker.backoff import retry_delay_s


def test_the_retry_delay_doubles_up_to_its_bound_and_honours_an_asked_delay() -> None:
    delays = [retry_delay_s(n, base_s=1.0, max_s=60.0) for n in range(1, 9)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    assert retry_delay_s(1, base_s=1.0, max_s=60.0, asked_s=5.0) == 5.0
    assert retry_delay_s(1, base_s=1.0, max_s=3.0, asked_s=5.0) == 3.0
    assert retry_delay_s(10_000, base_s=1.0, max_s=60.0) == 60.0
    with pytest.raises(ValueError, match="follows a failure"):
        retry_delay_s(0, base_s=1.0, max_s=1.0)
