"""ADK's session event, field for field, as it crosses the `events` topic.

The models read ADK's camelCase JSON as it is and write it back equal as a
JSON value (:func:`event_to_json` dumps only the fields that were set).
Fields ADK carries but context management never reads are named in each
model's :attr:`AdkModel.adk_fields` and kept as extras. Decoding is lenient
(an unknown field is kept too, so older and newer records still fold); the
append door is strict (:func:`schemas.unknown_fields.unknown_fields`).
Numbers and booleans are strict (:mod:`schemas.numbers`): refused, never
coerced. Why: ``schemas/README.md``, "Events as ADK writes them".
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Final

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, model_validator
from pydantic.alias_generators import to_camel

from schemas.numbers import Count, FiniteFloat, TokenCount
from schemas.one_pass import BoundedJson, bounded_json, count_model

JsonObject = dict[str, Any]
#: A free-form JSON object a field holds as given (tool arguments, a state
#: delta); the codec's one pass walks it for its bounds (:mod:`schemas.one_pass`).
FreeFormObject = Annotated[JsonObject, AfterValidator(bounded_json)]

#: Characters of an event id or invocation id (ADK writes 36-character uuids).
MAX_ID_CHARS: Final = 256


class AdkModel(BaseModel):
    """Base of every ADK-shaped model: camelCase on the wire, snake_case in code."""

    model_config = ConfigDict(
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        # Strings are kept byte for byte; ADK's own values are never coerced.
        coerce_numbers_to_str=False,
    )

    #: ADK's (or genai's) fields of this model that context management keeps as
    #: given without reading them (snake_case; the camelCase alias is known too).
    adk_fields: ClassVar[frozenset[str]] = frozenset()

    # Extras are free-form values too, walked by the codec's one pass like them.
    __pydantic_extra__: dict[str, BoundedJson] = Field(init=False)

    # Each object a record holds counts its values in the codec's one pass.
    _counted = model_validator(mode="after")(count_model)


class FunctionCall(AdkModel):
    """A tool call the model asked for."""

    adk_fields = frozenset({"partial_args", "will_continue"})

    id: str | None = None
    name: str | None = None
    args: FreeFormObject | None = None


class FunctionResponse(AdkModel):
    """The result of a tool call, matched to its call by ``id``."""

    adk_fields = frozenset({"will_continue", "scheduling", "parts"})

    id: str | None = None
    name: str | None = None
    response: FreeFormObject | None = None


class Blob(AdkModel):
    """Inline bytes (base64 on the wire, kept as the string it arrived as)."""

    mime_type: str | None = None
    data: str | None = None
    display_name: str | None = None


class FileData(AdkModel):
    """A reference to a file by URI."""

    file_uri: str | None = None
    mime_type: str | None = None
    display_name: str | None = None


class Part(AdkModel):
    """One part of a content: text, a thought, a call, a response or media."""

    adk_fields = frozenset(
        {
            "media_resolution",
            "video_metadata",
            "part_metadata",
            "audio_transcription",
            "media_processing",
            "speech_metadata",
        }
    )

    text: str | None = None
    thought: StrictBool | None = None
    # Opaque bytes the model wants back; base64 text on the wire, kept verbatim.
    thought_signature: str | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    inline_data: Blob | None = None
    file_data: FileData | None = None
    executable_code: FreeFormObject | None = None
    code_execution_result: FreeFormObject | None = None
    tool_call: FreeFormObject | None = None
    tool_response: FreeFormObject | None = None


class Content(AdkModel):
    """A genai ``Content``: a role and its parts."""

    role: str | None = None
    parts: list[Part] | None = None


class Transcription(AdkModel):
    """A live-audio transcript carried by an event without content."""

    adk_fields = frozenset(
        {"language_code", "speaker_label", "words", "start_offset", "end_offset"}
    )

    text: str | None = None
    finished: StrictBool | None = None


class UsageMetadata(AdkModel):
    """Token usage the model reported for the call that produced the event."""

    adk_fields = frozenset(
        {
            "cache_tokens_details",
            "cached_content_token_count",
            "candidates_tokens_details",
            "prompt_tokens_details",
            "thoughts_token_count",
            "tool_use_prompt_token_count",
            "tool_use_prompt_tokens_details",
            "traffic_type",
        }
    )

    prompt_token_count: TokenCount | None = None
    candidates_token_count: TokenCount | None = None
    total_token_count: TokenCount | None = None


class NodeInfo(AdkModel):
    """Where in a workflow the event was produced (``""`` outside workflows)."""

    adk_fields = frozenset({"output_for", "message_as_output"})

    path: str = ""


class EventCompaction(AdkModel):
    """A summary standing in for the raw events with timestamps in [start, end]."""

    start_timestamp: FiniteFloat
    end_timestamp: FiniteFloat
    compacted_content: Content


class EventActions(AdkModel):
    """What an event does besides carrying content."""

    adk_fields = frozenset({"route", "render_ui_widgets", "set_model_response"})

    skip_summarization: StrictBool | None = None
    state_delta: FreeFormObject = Field(default_factory=dict)
    # Artifact name -> the version the event saved.
    artifact_delta: dict[str, Count] = Field(default_factory=dict)
    transfer_to_agent: str | None = None
    transfer_reason: str | None = None
    escalate: StrictBool | None = None
    requested_auth_configs: FreeFormObject = Field(default_factory=dict)
    requested_tool_confirmations: FreeFormObject = Field(default_factory=dict)
    compaction: EventCompaction | None = None
    end_of_agent: StrictBool | None = None
    agent_state: FreeFormObject | None = None
    rewind_before_invocation_id: str | None = None


# What an event without `nodeInfo` or `actions` holds: one instance each, shared
# (both are frozen, and nothing changes their maps in place), where a factory
# building them anew would validate two models per event decoded. NodeInfo is
# hashable, so pydantic hands its default out as it is; EventActions (maps) is
# not, and a default would be deep-copied, so a factory hands out the one.
_NO_NODE_INFO: Final = NodeInfo()
_NO_ACTIONS: Final = EventActions()


class Event(AdkModel):
    """One ADK session event: an LLM-response-shaped record plus bookkeeping."""

    adk_fields = frozenset(
        {
            "output",
            "model_version",
            "grounding_metadata",
            "turn_complete_reason",
            "interaction_status",
            "finish_reason",
            "live_session_resumption_update",
            "go_away",
            "voice_activity",
            "avg_logprobs",
            "logprobs_result",
            "citation_metadata",
            "interaction_id",
            "environment_id",
        }
    )

    # Ids are uuids in ADK; the bound keeps a compaction request (which lists
    # its window's event ids) far below the topic's message limit.
    id: str = Field(default="", max_length=MAX_ID_CHARS)
    invocation_id: str = Field(default="", max_length=MAX_ID_CHARS)
    author: str
    branch: str | None = None
    isolation_scope: str | None = None
    node_info: NodeInfo = _NO_NODE_INFO
    timestamp: FiniteFloat
    content: Content | None = None
    partial: StrictBool | None = None
    turn_complete: StrictBool | None = None
    interrupted: StrictBool | None = None
    error_code: str | None = None
    error_message: str | None = None
    usage_metadata: UsageMetadata | None = None
    input_transcription: Transcription | None = None
    output_transcription: Transcription | None = None
    live_session_id: str | None = None
    cache_metadata: FreeFormObject | None = None
    custom_metadata: FreeFormObject | None = None
    # A set in ADK, serialized as a sorted list.
    long_running_tool_ids: tuple[str, ...] | None = None
    actions: EventActions = Field(default_factory=lambda: _NO_ACTIONS)


def event_to_json(event: Event) -> JsonObject:
    """The event as ADK-style camelCase JSON, exactly the fields that were set."""
    return event.model_dump(mode="json", by_alias=True, exclude_unset=True)


def content_as_given(content: Content) -> JsonObject:
    """A content as camelCase JSON, exactly the fields that were set (as :func:`event_to_json`).

    What a record that carries a content on (a compaction request's seed)
    writes, so that it reads back equal: an explicit ``null`` the producer
    wrote, extra fields included, is kept rather than dropped.
    """
    return content.model_dump(mode="json", by_alias=True, exclude_unset=True)


def content_to_json(content: Content) -> JsonObject:
    """A content as genai dumps it: camelCase, ``None`` fields omitted."""
    return content.model_dump(mode="json", by_alias=True, exclude_none=True)
