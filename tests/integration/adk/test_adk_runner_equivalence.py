"""An unchanged ADK ``Runner`` gives the models the same contents on every session service.

The scripted models (``tests/support/adk_runner``) answer from their request
alone, so any difference in what a service returns to the Runner shows up in
the recorded ``LlmRequest.contents`` of a later call. Each service of
:data:`FACTORIES` runs the multi-agent script with ADK-owned sliding-window
compaction and is compared with ADK's ``InMemorySessionService`` (call ids
aside). The routing case of notes §3 E4 is checked against an expectation
written out here by hand.

At merge the lead adds the drop-in to :data:`FACTORIES` (``view=full`` and
``view=live``) and the pipeline-owned run (``run_script(..., compaction=None,
before_turn=...)`` on an app owned by the pipeline with the same interval and
overlap, compared by
:func:`~tests.support.adk_runner.equivalence.assert_pipeline_owned_equivalent`).
"""

from __future__ import annotations

from typing import Final

import pytest

from tests.support.adk_runner.equivalence import (
    assert_adk_owned_equivalent,
    assert_pipeline_owned_equivalent,
)
from tests.support.adk_runner.normalize import normalized_calls
from tests.support.adk_runner.script import MULTI_AGENT_SCRIPT, RunResult, run_script
from tests.support.adk_runner.scripted_model import CONTEXT_PREFIX
from tests.support.adk_runner.services import ADK_IN_MEMORY, ServiceFactory
from tests.support.adk_runner.summarizer import sliding_window

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::UserWarning"),  # ADK's [EXPERIMENTAL] notices
]

#: The services held to ADK's in-memory one; the lead adds ctxstream's (both views).
FACTORIES: Final[list[ServiceFactory]] = [ADK_IN_MEMORY]
INTERVAL: Final = 2
OVERLAP: Final = 1


async def _adk_owned(factory: ServiceFactory, script: tuple[str, ...]) -> RunResult:
    return await run_script(await factory.make(), script, sliding_window(INTERVAL, OVERLAP))


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.name)
async def test_adk_runner_contents_equal_adks_in_memory_service(factory: ServiceFactory) -> None:
    reference = await _adk_owned(ADK_IN_MEMORY, MULTI_AGENT_SCRIPT)
    run = await _adk_owned(factory, MULTI_AGENT_SCRIPT)
    assert_adk_owned_equivalent(run, reference, full=factory.full_history)
    # Summaries by range (how pipeline-owned runs compare) agree on ADK-owned runs too.
    assert_pipeline_owned_equivalent(run, reference, history=reference.events)


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
