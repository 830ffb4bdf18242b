"""The example's agents: a coordinator with a weather and a booking sub-agent, and their tools.

The model is the scripted one (:mod:`scripted_model`: no network, no key) unless
``CTXSTREAM_EXAMPLE_MODEL`` names another (e.g. ``gemini-2.0-flash``; ADK then needs that
model's key). ``root_agent`` is what ``adk web``/``adk api_server``/``adk run`` load.
"""

from __future__ import annotations

import os

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm

# Relative: ADK imports this folder as the package `adk`, the example runs it as `examples.adk`.
from .scripted_model import ScriptedLlm  # noqa: TID252
from .tools import book_table, get_weather  # noqa: TID252


def build_agents(model: str | None = None) -> LlmAgent:
    """The coordinator and its two sub-agents, each on `model` (None: a scripted model each)."""

    def model_of(agent: str) -> str | BaseLlm:
        return model if model else ScriptedLlm(model="scripted", agent=agent)

    weather = LlmAgent(
        name="weather_agent",
        model=model_of("weather_agent"),
        description="Answers questions about the weather.",
        instruction="Answer weather questions with the get_weather tool.",
        tools=[get_weather],
    )
    booking = LlmAgent(
        name="booking_agent",
        model=model_of("booking_agent"),
        description="Books restaurant tables.",
        instruction="Book tables with the book_table tool.",
        tools=[book_table],
    )
    return LlmAgent(
        name="coordinator",
        model=model_of("coordinator"),
        description="Greets the user and hands each request to the right agent.",
        instruction="Transfer weather questions to weather_agent and bookings to booking_agent.",
        sub_agents=[weather, booking],
    )


root_agent = build_agents(os.environ.get("CTXSTREAM_EXAMPLE_MODEL"))
