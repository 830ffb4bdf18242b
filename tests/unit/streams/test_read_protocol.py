"""The wire contract of context reads: paths, parameters and where a worker is advertised."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from schemas.read_protocol import (
    ContextQuery,
    ExpandQuery,
    ProjectionQuery,
    page_token,
    page_token_offset,
    query_parameters,
    read_path,
)
from streams.projector_settings import ProjectorSettings


def test_a_session_key_is_one_percent_encoded_segment_of_the_path() -> None:
    encoded = "/sessions/acme%2Fsupport%2Fu1%2Fs1/context"
    assert read_path("acme/support/u1/s1", "context") == encoded
    assert read_path("a/../b c/%", "projection") == "/sessions/a%2F..%2Fb%20c%2F%25/projection"


def test_parameters_leave_unset_ones_out_and_read_back_equal() -> None:
    query = ContextQuery(agent="root", min_offset=7, timeout_s=2.5)
    parameters = query_parameters(query)
    assert parameters == {
        "agent": "root",
        "include_contents": "default",
        "min_offset": "7",
        "timeout_s": "2.5",
    }
    assert ContextQuery.model_validate(parameters) == query
    assert query_parameters(ProjectionQuery()) == {"timeout_s": "10.0"}


@pytest.mark.parametrize(
    "parameters",
    [{"min_offset": "-1"}, {"timeout_s": "0"}, {"timeout_s": "301"}, {"include_contents": "x"}],
)
def test_parameters_out_of_bounds_are_refused(parameters: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        ContextQuery.model_validate(parameters)


def test_the_advertised_address_is_the_bound_one_unless_given() -> None:
    assert ProjectorSettings().query_address(41234) == "127.0.0.1:41234"
    assert ProjectorSettings(query_bind="::1").query_address(80) == "[::1]:80"
    given = ProjectorSettings(query_advertised_address="reads.example:443")
    assert given.query_address(41234) == "reads.example:443"
    with pytest.raises(ValidationError):
        ProjectorSettings(query_advertised_address="http://reads.example")


def test_an_as_of_read_waits_for_its_offset_and_takes_no_min_offset() -> None:
    travel = ContextQuery.model_validate({"as_of": "12"})
    assert travel.awaited() == ("as_of", 12)
    assert ContextQuery(min_offset=3).awaited() == ("min_offset", 3)
    assert ContextQuery().awaited() is None
    with pytest.raises(ValidationError, match="as_of: not with min_offset"):
        ContextQuery.model_validate({"as_of": "12", "min_offset": "3"})
    with pytest.raises(ValidationError, match="as_of"):
        ContextQuery.model_validate({"as_of": "-1"})


def test_expand_parameters_read_back_equal_and_refuse_bad_pages() -> None:
    query = ExpandQuery(summary_id="s1", page_size=5, page_token=page_token(41))
    assert ExpandQuery.model_validate(query_parameters(query)) == query
    assert page_token_offset(query.page_token) == 41
    assert page_token_offset(None) == -1
    for parameters in (
        {},
        {"summary_id": ""},
        {"summary_id": "s", "page_size": "0"},
        {"summary_id": "s", "page_size": "1001"},
        {"summary_id": "s", "page_token": "-1"},
        {"summary_id": "s", "page_token": "abc"},
    ):
        with pytest.raises(ValidationError):
            ExpandQuery.model_validate(parameters)
