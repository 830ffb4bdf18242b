"""Run the worked example on ctxstream and on ADK's in-memory service, side by side.

Against a running ``ctxstream up`` (the brokers in ``CTXSTREAM_KAFKA_BOOTSTRAP``, the read
model in ``CTXSTREAM_POSTGRES_DSN``; README.md here): the same conversation goes through two
unchanged ADK Runners, one on ``ctxstream.adk.SessionService`` (and ``MemoryService``), one
on ADK's ``InMemorySessionService``. Each turn prints how many events ``get_session``
returned on each, how many of ctxstream's are the pipeline's summaries, and the size of the
model's context (the largest model call of the turn). The app carries no compaction config:
the pipeline compacts (``owner: pipeline``, the default), so ctxstream's contexts stop
growing once a summary lands while ADK's in-memory ones keep growing. At the end the
session goes to memory and a question is answered from it.

Usage: ``python -m examples.adk.run_example [--view full|live] [--tenant T] [--turns N]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from collections.abc import Sequence
from typing import Final

from google.adk.agents import LlmAgent
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService, InMemorySessionService
from google.genai import types

from .agent import build_agents  # noqa: TID252 - see agent.py
from .scripted_model import ScriptedLlm, context_chars  # noqa: TID252

#: The app's name: ADK names an app after its folder, and this folder is ``adk``.
APP: Final = "adk"
USER: Final = "alice"
#: The conversation; it repeats when more turns are asked for.
TURNS: Final = (
    "Hi there",
    "What is the weather in Paris",
    "And what is the weather in Oslo",
    "Please book a table at Chez Nous for 2",
    "Thanks a lot",
    "What is the weather in Rome",
    "Book a table at Da Mario for 4",
    "How is the weather in Lisbon",
    "Hello again",
    "Book a table at Noma for 6",
    "What is the weather in Oslo today",
    "Thanks, that is all",
)


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m examples.adk.run_example")
    parser.add_argument("--view", choices=("full", "live"), default="full")
    parser.add_argument("--tenant", default="demo")
    parser.add_argument("--turns", type=int, default=len(TURNS))
    return parser.parse_args(argv)


def _uri(args: argparse.Namespace) -> str:
    bootstrap = os.environ.get("CTXSTREAM_KAFKA_BOOTSTRAP", "").strip()
    if not bootstrap or not os.environ.get("CTXSTREAM_POSTGRES_DSN", "").strip():
        sys.exit(
            "run_example: set CTXSTREAM_KAFKA_BOOTSTRAP and CTXSTREAM_POSTGRES_DSN to the "
            "deployment ctxstream up started (examples/adk/README.md)"
        )
    prefix = os.environ.get("CTXSTREAM_TOPIC_PREFIX", "ctxstream")
    return f"ctxstream://{bootstrap}/?tenant={args.tenant}&prefix={prefix}&view={args.view}"


def _models(root: LlmAgent) -> list[ScriptedLlm]:
    agents = [root, *root.sub_agents]
    return [a.model for a in agents if isinstance(a, LlmAgent) and isinstance(a.model, ScriptedLlm)]


def _context(models: list[ScriptedLlm], since: list[int]) -> str:
    """The largest model call since `since` (each model's request count): contents, chars."""
    calls = [r for m, n in zip(models, since, strict=True) for r in m.requests[n:]]
    if not calls:
        return "n/a"
    sizes = [(len(r.contents), context_chars(r)) for r in calls]
    contents, chars = max(sizes, key=lambda size: size[1])
    return f"{contents:3d} contents {chars:6d} chars"


async def _turn(runner: Runner, session_id: str, text: str) -> str:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    said = ""
    async for event in runner.run_async(user_id=USER, session_id=session_id, new_message=message):
        if event.content and event.content.parts and event.content.parts[0].text:
            said = event.content.parts[0].text
    return said


async def _events(service: BaseSessionService, session_id: str) -> list[Event]:
    session = await service.get_session(app_name=APP, user_id=USER, session_id=session_id)
    return session.events if session is not None else []


async def run(args: argparse.Namespace) -> None:
    """The conversation on both services, a line per turn, then a memory question."""
    uri = _uri(args)
    from ctxstream.adk import MemoryService, SessionService

    ours, memory, theirs = SessionService(uri), MemoryService(uri), InMemorySessionService()
    our_agents, their_agents = build_agents(), build_agents()
    runners = (
        Runner(app_name=APP, agent=our_agents, session_service=ours, memory_service=memory),
        Runner(app_name=APP, agent=their_agents, session_service=theirs),
    )
    models = (_models(our_agents), _models(their_agents))
    session_id = f"demo-{uuid.uuid4().hex[:8]}"
    for service in (ours, theirs):
        await service.create_session(app_name=APP, user_id=USER, session_id=session_id)
    _say(f"session {args.tenant}/{APP}/{USER}/{session_id} on {uri}")
    _say(f"{'turn':>4}  {'ctxstream: events (summaries)  model context':<56}  in-memory ADK")
    try:
        for number in range(args.turns):
            text = TURNS[number % len(TURNS)]
            since = [[len(m.requests) for m in side] for side in models]
            reply = await _turn(runners[0], session_id, text)
            await _turn(runners[1], session_id, text)
            held, kept = await _events(ours, session_id), await _events(theirs, session_id)
            summaries = sum(1 for e in held if e.actions.compaction is not None)
            _say(f"{number + 1:4d}  user: {text}\n      model: {reply}")
            _say(
                f"      {len(held):4d} events ({summaries})  {_context(models[0], since[0])}"
                f"    {len(kept):4d} events  {_context(models[1], since[1])}"
            )
        session = await ours.get_session(app_name=APP, user_id=USER, session_id=session_id)
        if session is not None:
            await memory.add_session_to_memory(session)
        found = await memory.search_memory(app_name=APP, user_id=USER, query="weather in Oslo")
        _say("memory, 'weather in Oslo':")
        for entry in found.memories:
            text = "".join(p.text or "" for p in entry.content.parts or [])
            _say(f"  {entry.timestamp}  {entry.author}: {text}")
    finally:
        await runners[0].close()
        await runners[1].close()
        await memory.close()
        await ours.close()


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the arguments and run the example."""
    asyncio.run(run(_arguments(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":
    main()
