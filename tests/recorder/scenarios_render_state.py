"""Scenarios of the ``summarizer_render`` (reference §7) and ``session_state`` (§10, §11) kinds."""

from __future__ import annotations

from tests.recorder.event_json import (
    Json,
    VectorScenario,
    call,
    content,
    event,
    fcall,
    fresp,
    reply,
    response,
    state_only,
    summary,
    thought,
    user,
)


def render(events: list[Json]) -> Json:
    """The ``input`` of a summarizer_render vector: the window handed to the summarizer."""
    return {"events": events}


def seed(timestamp: float, text: str) -> Json:
    """A rolling seed as the token trigger builds it: author model, the previous summary."""
    return event("seed", "seed-invocation", "model", timestamp, content("model", text))


SUMMARIZER_RENDER: list[VectorScenario] = [
    VectorScenario(
        "mixed-parts",
        "Text, thoughts, a call and its response; a state-only event renders nothing.",
        render(
            [
                user("e1", "inv1", 100.0, "Find me a recipe"),
                event(
                    "e2",
                    "inv1",
                    "chef",
                    101.0,
                    content("model", thought("Vegetarian is likely."), "Searching recipes."),
                ),
                call(
                    "e3", "inv1", 102.0, "recipes", {"diet": "veg", "max": 2}, "r1", author="chef"
                ),
                response(
                    "e4", "inv1", 103.0, "recipes", {"found": ["dal", "soup"]}, "r1", author="chef"
                ),
                state_only("e5", "inv1", 104.0, picked="dal"),
                reply("e6", "inv1", 105.0, "Try the dal.", author="chef"),
            ]
        ),
    ),
    VectorScenario(
        "none-args-and-empty-response",
        "A call without args renders None; an absent response renders None.",
        render(
            [
                call("e1", "inv1", 100.0, "ping", None, "p1"),
                response("e2", "inv1", 101.0, "ping", None, "p1"),
                call("e3", "inv1", 102.0, "echo", {}, "p2"),
                response("e4", "inv1", 103.0, "echo", {}, "p2"),
            ]
        ),
    ),
    VectorScenario(
        "seeded-window",
        "A seed (author model, the previous summary) renders first as a model line.",
        render(
            [
                seed(100.0, "Earlier: the user planned a trip to Kyoto."),
                user("e5", "inv3", 104.0, "Add a day in Nara"),
                reply("e6", "inv3", 105.0, "Nara added."),
            ]
        ),
    ),
    VectorScenario(
        "empty-window",
        "An empty window: no model call, no prompt, no summary.",
        render([]),
    ),
    VectorScenario(
        "only-contentless-events",
        "Events without content: the transcript is empty but the model is still called.",
        render([state_only("e1", "inv1", 100.0, a=1), state_only("e2", "inv1", 101.0, b=2)]),
    ),
    VectorScenario(
        "auth-events-skipped",
        "Events with a credential request or answer are skipped whole.",
        render(
            [
                user("e1", "inv1", 100.0, "Open my drive"),
                event(
                    "e2",
                    "inv1",
                    "agent",
                    101.0,
                    content(
                        "model", "I need access.", fcall("adk_request_credential", {"s": 1}, "a1")
                    ),
                ),
                event(
                    "e3",
                    "inv2",
                    "user",
                    102.0,
                    content("user", fresp("adk_request_credential", {"k": "v"}, "a1")),
                ),
                reply("e4", "inv2", 103.0, "Drive opened."),
            ]
        ),
    ),
    VectorScenario(
        "summary-event-thoughts-skipped",
        "A summary event's thought parts are not rendered; its text parts are.",
        render(
            [
                summary(
                    "e1",
                    102.0,
                    100.0,
                    101.0,
                    "unused",
                    content=content("model", thought("private reasoning"), "Summary text part."),
                ),
                user("e2", "inv2", 103.0, "next"),
            ]
        ),
    ),
    VectorScenario(
        "empty-thought-and-empty-text",
        "A thought with empty text and an empty text part render nothing.",
        render(
            [
                event("e1", "inv1", "agent", 100.0, content("model", thought(""), "", "kept")),
            ]
        ),
    ),
    VectorScenario(
        "truncation-boundary",
        "Tool payloads of exactly 2000 characters are kept; longer ones are cut with a note.",
        render(
            [
                call("e1", "inv1", 100.0, "store", {"k": "a" * 1991}, "s1"),
                response("e2", "inv1", 101.0, "store", {"k": "b" * 1992}, "s1"),
                call("e3", "inv1", 102.0, "store", {"k": "c" * 2600}, "s2"),
            ]
        ),
    ),
    VectorScenario(
        "long-text-not-truncated",
        "Plain text is never truncated, whatever its length.",
        render([user("e1", "inv1", 100.0, "word " * 700)]),
    ),
    VectorScenario(
        "multiline-and-non-ascii",
        "Text is used verbatim: newlines and non-ASCII characters.",
        render(
            [
                user("e1", "inv1", 100.0, "Zwei Zeilen:\nÄrger und Größe — 東京"),
                reply("e2", "inv1", 101.0, "Noté.\n\nÇa marche."),
            ]
        ),
    ),
    VectorScenario(
        "out-of-order-window",
        "The range comes from the first and last window items, here inverted.",
        render(
            [
                user("e1", "inv1", 105.0, "late stamp first"),
                reply("e2", "inv1", 100.0, "early stamp last"),
            ]
        ),
    ),
    VectorScenario(
        "nested-args-repr",
        "Arguments and responses render as Python reprs in insertion order.",
        render(
            [
                call(
                    "e1",
                    "inv1",
                    100.0,
                    "plan",
                    {"days": [1, 2], "opts": {"fast": True, "note": None}},
                    "n1",
                ),
                response("e2", "inv1", 101.0, "plan", {"ok": False, "why": "it's 'quoted'"}, "n1"),
            ]
        ),
    ),
]


def state(
    events: list[Json],
    initial: Json | None = None,
    rewind_before: str | None = None,
    *,
    probe: bool = False,
) -> Json:
    """The ``input`` of a session_state vector."""
    data: Json = {
        "initial_state": initial or {},
        "events": events,
        "rewind_before_invocation_id": rewind_before,
    }
    if probe:
        data["probe_new_session"] = True
    return data


def delta(event_id: str, invocation: str, timestamp: float, **values: object) -> Json:
    """An event carrying a state delta (keys with prefixes use ``**{"app:k": v}``)."""
    return state_only(event_id, invocation, timestamp, **values)


SESSION_STATE: list[VectorScenario] = [
    VectorScenario(
        "prefix-scopes",
        "app:, user:, temp: and session keys at creation and in deltas.",
        state(
            [
                delta(
                    "e1",
                    "inv1",
                    100.0,
                    **{"app:theme": "dark", "user:lang": "de", "temp:draft": 1, "count": 1},
                )
            ],
            {"app:version": 3, "user:tier": "gold", "temp:scratch": True, "topic": "cars"},
        ),
    ),
    VectorScenario(
        "rewind-state-delta",
        "Rewind before inv2 restores session keys, nulls later and creation ones; app:/user: stay.",
        state(
            [
                delta("e1", "inv1", 100.0, **{"step": 1, "user:seen": 1}),
                delta("e2", "inv2", 101.0, **{"step": 2, "extra": "x", "app:hits": 5}),
                delta("e3", "inv3", 102.0, **{"step": 3}),
            ],
            {"origin": "web"},
            "inv2",
        ),
    ),
    VectorScenario(
        "rewind-before-first-invocation",
        "Rewinding before the first invocation nulls every session key.",
        state([delta("e1", "inv1", 100.0, a=1), delta("e2", "inv2", 101.0, b=2)], {"c": 3}, "inv1"),
    ),
    VectorScenario(
        "rewind-replays-none-values",
        "A None written before the rewind point deletes the key in the replay.",
        state(
            [
                delta("e1", "inv1", 100.0, a=1, b=2),
                delta("e2", "inv1", 101.0, a=None),
                delta("e3", "inv2", 102.0, a=5, b=6),
            ],
            None,
            "inv2",
        ),
    ),
    VectorScenario(
        "duplicate-redelivery-ignored",
        "Appending an equal event again neither duplicates it nor applies its delta twice.",
        state(
            [
                delta("e1", "inv1", 100.0, **{"n": 1, "app:n": 1}),
                delta("e1", "inv1", 100.0, **{"n": 1, "app:n": 1}),
                delta("e2", "inv1", 101.0, n=2),
            ]
        ),
    ),
    VectorScenario(
        "same-id-different-events-kept",
        "Two different events that share an id are both stored.",
        state([delta("e1", "inv1", 100.0, n=1), delta("e1", "inv1", 101.0, n=2)]),
    ),
    VectorScenario(
        "partial-event-not-stored",
        "A partial event is neither stored nor applied.",
        state(
            [
                delta("e1", "inv1", 100.0, a=1),
                {**delta("e2", "inv1", 101.0, a=2), "partial": True},
                delta("e3", "inv1", 102.0, b=3),
            ]
        ),
    ),
    VectorScenario(
        "temp-keys-not-persisted",
        "temp: keys reach the live session only and are stripped from the stored event.",
        state(
            [
                delta("e1", "inv1", 100.0, **{"temp:x": 1, "kept": True}),
                delta("e2", "inv2", 101.0, **{"temp:y": 2}),
            ]
        ),
    ),
    VectorScenario(
        "none-value-stored",
        "A None value is stored as a value, not a deletion.",
        state([delta("e1", "inv1", 100.0, a=1), delta("e2", "inv1", 101.0, a=None)], {"b": 2}),
    ),
    VectorScenario(
        "new-session-sees-app-and-user-state",
        "A second session of the same user reads the app and user stores.",
        state(
            [delta("e1", "inv1", 100.0, **{"app:motd": "hi", "user:name": "Ana", "local": 1})],
            {"user:plan": "free"},
            probe=True,
        ),
    ),
    VectorScenario(
        "rewind-of-unchanged-state",
        "A rewind where nothing changed after the point has an empty delta for kept keys.",
        state(
            [delta("e1", "inv1", 100.0, a=1), reply("e2", "inv2", 101.0, "no state here")],
            None,
            "inv2",
        ),
    ),
]
