"""The agents: a coordinator and two sub-agents, each with a scripted model and real tools."""

from __future__ import annotations

from google.adk.agents.llm_agent import LlmAgent
from google.adk.apps.app import App, EventsCompactionConfig

from tests.support.adk_runner.recorder import Recorder
from tests.support.adk_runner.scripted_model import ScriptedLlm

APP_NAME = "equivalence"


def lookup_weather(city: str) -> dict[str, str]:
    """The weather of `city`: a fixed table, so every run gets the same answer."""
    return {"city": city, "sky": "sunny" if len(city) % 2 else "cloudy"}


def count_words(text: str) -> dict[str, int]:
    """How many words `text` has."""
    return {"words": len(text.split())}


def _agent(name: str, recorder: Recorder, **fields: object) -> LlmAgent:
    model = ScriptedLlm(model=f"scripted-{name}", agent=name, recorder=recorder)
    return LlmAgent(name=name, model=model, instruction=f"You are {name}.", **fields)


def coordinator(recorder: Recorder) -> LlmAgent:
    """The root: routes to `helper` (weather) and `researcher` (counting)."""
    helper = _agent("helper", recorder, tools=[lookup_weather], description="weather")
    researcher = _agent("researcher", recorder, tools=[count_words], description="counting")
    return _agent("coordinator", recorder, sub_agents=[helper, researcher])


def build_app(recorder: Recorder, compaction: EventsCompactionConfig | None) -> App:
    """The App the Runner runs; `compaction` None: ADK compacts nothing (pipeline-owned)."""
    return App(name=APP_NAME, root_agent=coordinator(recorder), events_compaction_config=compaction)
