"""An unchanged ADK ``Runner`` gives the models the same contents on every session service.

The scripted models (``tests/support/adk_runner``) answer from their request
alone, so any difference in what a service returns to the Runner shows up in
the recorded ``LlmRequest.contents`` of a later call. Each service of
:data:`FACTORIES` runs the multi-agent script with ADK-owned sliding-window
compaction and is compared with ADK's ``InMemorySessionService`` (call ids
aside). On ctxstream the same script runs again with the pipeline owning
compaction (the App has none; the projector requests, the summarizer answers)
and is compared with ADK's run by the range each summary covers. The routing
case of notes §3 E4 is checked against an expectation written out here by hand.

The deployment (:func:`site`): a worker whose default is ``owner: adk`` (ADK's
runner compacts, the pipeline requests nothing), the tenant
:data:`PIPELINE_TENANT` owned by the pipeline with ADK's interval and overlap,
a summarizer (extractive, its default) and a sink into a schema of its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Final

import pytest
from google.adk.events.event import Event
from google.adk.sessions.session import Session
from typing_extensions import override

from ctxstream.adk.compaction_wait import settled
from ctxstream.adk.session_service import SessionService
from projections.compaction.config import CompactionConfig
from schemas.keys import SessionKeyParts
from tests.integration.adk.conftest import AdkDeployment, adk_deployment_of
from tests.support.adk_runner.equivalence import (
    assert_adk_owned_equivalent,
    assert_pipeline_owned_equivalent,
)
from tests.support.adk_runner.normalize import normalized_calls, summary_ranges
from tests.support.adk_runner.script import MULTI_AGENT_SCRIPT, RunResult, run_script
from tests.support.adk_runner.scripted_model import CONTEXT_PREFIX
from tests.support.adk_runner.services import (
    ADK_IN_MEMORY,
    COMPACTION_WAIT_S,
    ServiceFactory,
    close_service,
    ctxstream_factory,
)
from tests.support.adk_runner.summarizer import sliding_window

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::UserWarning"),  # ADK's [EXPERIMENTAL] notices
]

#: The services held to ADK's in-memory one.
FACTORIES: Final[list[ServiceFactory]] = [
    ADK_IN_MEMORY,
    ctxstream_factory("full"),
    ctxstream_factory("live"),
]
INTERVAL: Final = 2
OVERLAP: Final = 1
#: The tenant whose apps the pipeline compacts (every other tenant: ADK's runner does).
PIPELINE_TENANT: Final = "pipe"


@pytest.fixture(scope="module")
def equivalence_deployment(
    kafka_bootstrap: str, postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AdkDeployment]:
    pipeline = CompactionConfig(compaction_interval=INTERVAL, overlap_size=OVERLAP)
    with adk_deployment_of(
        kafka_bootstrap,
        postgres_dsn,
        tmp_path_factory.mktemp("equivalence"),
        compaction=CompactionConfig(owner="adk"),
        compaction_overrides={PIPELINE_TENANT: pipeline},
        summarizer=True,
    ) as deployment:
        yield deployment


@pytest.fixture
def site(equivalence_deployment: AdkDeployment, monkeypatch: pytest.MonkeyPatch) -> AdkDeployment:
    """The deployment, its read model named in the environment as ADK's registry would see it."""
    monkeypatch.setenv("CTXSTREAM_POSTGRES_DSN", equivalence_deployment.dsn)
    monkeypatch.setenv("CTXSTREAM_SINK_SCHEMA", equivalence_deployment.schema)
    return equivalence_deployment


async def _adk_owned(
    factory: ServiceFactory, script: tuple[str, ...], site: AdkDeployment | None = None
) -> RunResult:
    service = await factory.make(site)
    try:
        return await run_script(service, script, sliding_window(INTERVAL, OVERLAP))
    finally:
        await close_service(service)


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.name)
async def test_adk_runner_contents_equal_adks_in_memory_service(
    factory: ServiceFactory, site: AdkDeployment
) -> None:
    reference = await _adk_owned(ADK_IN_MEMORY, MULTI_AGENT_SCRIPT)
    run = await _adk_owned(factory, MULTI_AGENT_SCRIPT, site)
    assert_adk_owned_equivalent(run, reference, full=factory.full_history)
    # Summaries by range (how pipeline-owned runs compare) agree on ADK-owned runs too.
    assert_pipeline_owned_equivalent(run, reference, history=reference.events)


class _LateLookingService(SessionService):
    """Looks for a new turn's summary only once it has landed.

    A projector behind by more than the summarizer's round trip shows the service
    exactly this: the summary decided at the turn's first event is already folded
    when the service first asks, so no request is in flight any more.
    """

    @override
    async def _catch_up_summaries(
        self, key: SessionKeyParts, session: Session, event: Event, offset: int
    ) -> None:
        backend = await self._started()
        await settled(backend.client, key.key, offset, COMPACTION_WAIT_S)
        await super()._catch_up_summaries(key, session, event, offset)


async def _pipeline_owned(
    site: AdkDeployment, service_type: type[SessionService] = SessionService
) -> RunResult:
    """The script on the pipeline's tenant: the App compacts nothing, the pipeline does."""
    service = service_type(site.uri_for(PIPELINE_TENANT), compaction_wait_s=COMPACTION_WAIT_S)
    try:
        session_id = f"s{uuid.uuid4().hex[:12]}"
        return await run_script(service, MULTI_AGENT_SCRIPT, None, session_id=session_id)
    finally:
        await service.close()


def _ranges(run: RunResult) -> list[list[int]]:
    return [covered for _, _, covered in summary_ranges(run.events)]


async def test_adk_runner_pipeline_owned_compaction_gives_adks_contents(
    site: AdkDeployment,
) -> None:
    """The App compacts nothing; the pipeline's summaries stand where ADK's stood.

    The pipeline summarizes the windows ADK's sliding window summarizes (the same
    ranges, in order), and every model call sees them where ADK's calls saw ADK's.
    """
    reference = await _adk_owned(ADK_IN_MEMORY, MULTI_AGENT_SCRIPT)
    run = await _pipeline_owned(site)
    assert _ranges(run) == _ranges(reference)
    assert_pipeline_owned_equivalent(run, reference)


async def test_adk_runner_gets_a_summary_that_landed_before_the_service_looked(
    site: AdkDeployment,
) -> None:
    """A summary folded before the service first looks still reaches the turn's calls."""
    reference = await _adk_owned(ADK_IN_MEMORY, MULTI_AGENT_SCRIPT)
    run = await _pipeline_owned(site, _LateLookingService)
    assert _ranges(run) == _ranges(reference)
    assert_pipeline_owned_equivalent(run, reference)


async def test_adk_runner_a_different_conversation_is_told_apart() -> None:
    """The comparison can fail: one word changed in one turn changes what the models saw."""
    reference = await _adk_owned(ADK_IN_MEMORY, MULTI_AGENT_SCRIPT)
    changed = tuple(m.replace("Paris", "Rome") for m in MULTI_AGENT_SCRIPT)
    run = await _adk_owned(ADK_IN_MEMORY, changed)
    with pytest.raises(AssertionError):
        assert_adk_owned_equivalent(run, reference, full=False)
    with pytest.raises(AssertionError):
        assert_pipeline_owned_equivalent(run, reference)


async def test_adk_runner_script_exercises_agents_tools_transfers_and_compaction() -> None:
    """The script is worth comparing: every agent, both tools, transfers, four summaries."""
    run = await _adk_owned(ADK_IN_MEMORY, MULTI_AGENT_SCRIPT)
    agents = [call.agent for call in run.calls]
    assert set(agents) == {"coordinator", "helper", "researcher"}
    called = {
        part.function_call.name
        for event in run.events
        for part in (event.content.parts or [] if event.content else [])
        if part.function_call is not None
    }
    assert called == {"transfer_to_agent", "lookup_weather", "count_words"}
    summaries = [e for e in run.events if e.actions.compaction is not None]
    assert len(summaries) == len(MULTI_AGENT_SCRIPT) // INTERVAL
    # A summary reached a model: the contents after compaction are not the whole history.
    seen = normalized_calls(run.calls, run.events, summaries_by_range=True)
    assert any("summary_of" in content for _, contents in seen for content in contents)


async def test_adk_runner_routing_after_a_transfer_follows_the_hand_written_expectation() -> None:
    """Notes §3 E4: coordinator transfers to `helper`, interval 1: turn 2 goes to `helper`.

    Written out from ADK's rules, not from a run: the router picks the agent
    that replied last (helper); with interval 1 and no overlap, the summary
    after turn 1 covers its four events (user, transfer call, its response,
    helper's reply), and ADK's summarizer renders them one line each; turn
    2's contents are that summary, then the user's new message.
    """
    run = await run_script(
        await ADK_IN_MEMORY.make(), ("transfer helper", "hello again"), sliding_window(1, 0)
    )
    seen = normalized_calls(run.calls, run.events, summaries_by_range=True)
    assert [agent for agent, _ in seen] == ["coordinator", "helper", "helper"]
    first, transferred, second = (contents for _, contents in seen)
    user = "user"
    assert first == [{"role": user, "parts": [{"text": "transfer helper"}]}]
    assert transferred[0] == {"role": user, "parts": [{"text": "transfer helper"}]}
    shown = [[part["text"] for part in content["parts"]] for content in transferred[1:]]
    assert [texts[0].startswith(CONTEXT_PREFIX) for texts in shown] == [True, True]
    assert shown[0][1].startswith("[coordinator] called tool `transfer_to_agent`")
    assert shown[1][1].startswith("[coordinator] `transfer_to_agent` tool returned result")
    assert second == [{"summary_of": [0, 3]}, {"role": user, "parts": [{"text": "hello again"}]}]
    (summary,) = [e for e in run.events if e.actions.compaction is not None]
    compacted = summary.actions.compaction
    assert compacted is not None
    assert compacted.compacted_content is not None
    assert compacted.compacted_content.parts is not None
    assert compacted.compacted_content.parts[0].text == (
        "summary of 4 lines: user: transfer helper .. "
        "helper: helper: you said 'transfer helper' [contents=3]"
    )
    final = run.events[-1]
    assert final.author == "helper"
    assert final.content is not None
    assert final.content.parts is not None
    assert final.content.parts[0].text == "helper: you said 'hello again' [contents=2]"
