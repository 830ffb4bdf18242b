"""One request of a session at a time; other sessions go on."""

from __future__ import annotations

import asyncio

from schemas.keys import SessionKey
from summarizer_worker.session_locks import SessionLocks


async def test_one_session_waits_for_its_lock_while_another_goes_on() -> None:
    locks = SessionLocks()
    order: list[str] = []
    first_holds = asyncio.Event()
    release = asyncio.Event()

    async def hold(key: str, name: str, *, wait: bool) -> None:
        async with locks.hold(SessionKey(key)):
            order.append(f"{name} in")
            if wait:
                first_holds.set()
                await release.wait()
            order.append(f"{name} out")

    first = asyncio.create_task(hold("t/a/u/s1", "first", wait=True))
    await first_holds.wait()
    same = asyncio.create_task(hold("t/a/u/s1", "same", wait=False))
    other = asyncio.create_task(hold("t/a/u/s2", "other", wait=False))
    await other
    assert order == ["first in", "other in", "other out"]
    assert len(locks) == 1
    release.set()
    await asyncio.gather(first, same)
    assert order[3:] == ["first out", "same in", "same out"]
    assert len(locks) == 0
