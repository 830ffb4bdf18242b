"""The fields of an event that none of its models knows, each by its JSON path. Pure.

The models of :mod:`schemas.event` keep fields they do not model as extras,
so that the `events` topic stays readable whatever a newer producer wrote
(forward compatibility). The append door is strict instead: a field that
is neither modelled nor one of ADK's own (:attr:`~schemas.event.AdkModel.adk_fields`)
is most likely a misspelling (``invocationID``, ``txt``) that would be
stored and then silently do nothing, so the client refuses the event,
naming each such field. Names are known in camelCase (the wire's) and in
snake_case (ADK's population by name).

Example: ``{"author": "u", "timestamp": 1, "invocationID": "i",
"content": {"parts": [{"txt": "hi"}]}}`` ->
``["invocationID (did you mean invocationId?)", "content.parts[0].txt (did you mean text?)"]``.
"""

from __future__ import annotations

import difflib
import functools
import typing
from collections.abc import Iterator, Mapping
from typing import Final

from pydantic.alias_generators import to_camel

from schemas.event import AdkModel
from schemas.log_text import shown

#: Characters of an unknown field's name kept in a reason (it is the caller's input).
MAX_SHOWN_NAME: Final = 60
#: Unknown fields a refusal names; the rest are counted.
MAX_SHOWN_FIELDS: Final = 10


def unknown_fields(model: AdkModel) -> list[str]:
    """Every field of `model`, at any depth, that its model does not know, by JSON path.

    Each path carries a suggestion when a known name is close (case ignored).
    The values of free-form fields (``args``, ``stateDelta``,
    ``customMetadata``, ADK's unmodelled fields) are not looked into.
    """
    return list(_unknown(model, ""))


def unknown_top_fields(kind: type[AdkModel], fields: Mapping[str, object]) -> list[str]:
    """The names of `fields` (an object `kind` did not validate) that `kind` does not know.

    For a refusal that has other reasons too: a misspelt required field
    (``timestmp``) is then named beside the one reported missing. Only the
    top level, as the object's inner values may not be objects at all.
    """
    modelled = {name for name, _ in kind.model_fields.items()}
    modelled |= {info.alias for info in kind.model_fields.values() if info.alias}
    return [
        _described(kind, shown(name, MAX_SHOWN_NAME), name)
        for name in fields
        if name not in modelled and name not in _known_names(kind)
    ]


def unknown_fields_refusal(unknown: list[str]) -> str:
    """The one-line reason refusing an event with the `unknown` fields (not empty).

    Example: ``["invocationID (did you mean invocationId?)", "actions.foo"]`` ->
    ``unknown field(s) invocationID (did you mean invocationId?), actions.foo``.
    """
    listed = ", ".join(unknown[:MAX_SHOWN_FIELDS])
    more = len(unknown) - MAX_SHOWN_FIELDS
    return f"unknown field(s) {listed}" + (f", and {more} more" if more > 0 else "")


def _unknown(model: AdkModel, path: str) -> Iterator[str]:
    kind = type(model)
    extra = model.__pydantic_extra__
    if extra:
        known = _known_names(kind)
        for name in extra:
            if name not in known:
                yield _described(kind, f"{path}{shown(name, MAX_SHOWN_NAME)}", name)
    given = model.__pydantic_fields_set__  # an unset field holds its default: nothing unknown
    for name, alias in _nested_fields(kind).items():
        if name not in given:
            continue
        value = model.__dict__[name]
        if isinstance(value, AdkModel):
            yield from _unknown(value, f"{path}{alias}.")
        elif isinstance(value, list | tuple):
            for index, item in enumerate(value):
                if isinstance(item, AdkModel):
                    yield from _unknown(item, f"{path}{alias}[{index}].")


@functools.cache
def _nested_fields(kind: type[AdkModel]) -> dict[str, str]:
    """The fields of `kind` that may hold models (name -> camelCase alias): those walked."""
    return {
        name: info.alias or name
        for name, info in kind.model_fields.items()
        if _holds_models(info.annotation)
    }


def _holds_models(annotation: object) -> bool:
    """Whether `annotation` names an :class:`AdkModel`, alone or inside a union or a list."""
    if isinstance(annotation, type) and issubclass(annotation, AdkModel):
        return True
    return any(_holds_models(argument) for argument in typing.get_args(annotation))


def _described(kind: type[AdkModel], where: str, name: str) -> str:
    """`where`, with the known camelCase name closest to `name` when one is close."""
    lowered = _lowered_names(kind)
    close = difflib.get_close_matches(name.lower(), lowered, n=1)
    return f"{where} (did you mean {lowered[close[0]]}?)" if close else where


@functools.cache
def _known_names(kind: type[AdkModel]) -> frozenset[str]:
    """The extra names `kind` accepts: ADK's unmodelled fields, snake_case and camelCase."""
    return kind.adk_fields | {to_camel(name) for name in kind.adk_fields}


@functools.cache
def _lowered_names(kind: type[AdkModel]) -> dict[str, str]:
    """Every camelCase name `kind` knows, lowered -> as written."""
    names = [info.alias or name for name, info in kind.model_fields.items()]
    names += [to_camel(name) for name in sorted(kind.adk_fields)]
    return {name.lower(): name for name in names}
