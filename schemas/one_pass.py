"""The bounds and the count the codec's one validation pass takes on the way. Pure.

:mod:`schemas.codec` validates an `events` record once, from its parsed value:
the models' types bound what they model (strict, finite, 64-bit numbers:
:mod:`schemas.numbers`), and what they leave free-form (tool arguments and
results, state deltas, ADK's extra fields), typed :data:`BoundedJson` or
:data:`schemas.event.FreeFormObject`, is walked where it is validated by
:func:`bounded_json`, against the bounds of :mod:`schemas.json_bounds`.
Each model adds its members to the count (:func:`count_model`), so that the
pass ends with the number of JSON values
:func:`schemas.json_bounds.check_json_bounds` counts, without that second
walk. The hooks act only in a pass (a :class:`PassTally` as the validation
context): models built in code are neither walked nor counted.

The pass may refuse more than the bounds do: a free-form value is allowed
the levels of the deepest place one can sit (:mod:`schemas.free_form_places`).
A record it refuses is decoded the long way, which accepts it or says why not.

Example: ``{"turn": 1, "notes": ["a", {"b": 2.5}]}`` adds 5 values (the
object's two members, the array's two items, the inner object's member).
"""

from __future__ import annotations

import functools
import math
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ValidationInfo

from schemas.json_bounds import INT64_MAX, INT64_MIN, MAX_ITEMS

ValueT = TypeVar("ValueT")
ModelT = TypeVar("ModelT", bound=BaseModel)


class BeyondBoundsError(ValueError):
    """A value the pass leaves to the long way (which names what and where)."""

    def __init__(self) -> None:
        super().__init__("beyond the bounds of one pass")


@dataclass(slots=True)
class PassTally:
    """The validation context of one pass over a record.

    Attributes:
        free_form_levels: Levels of containers a free-form value may span,
            itself included, wherever it sits.
        nodes: JSON values counted so far; the record itself is one.
    """

    free_form_levels: int
    nodes: int = 1


def bounded_json(value: ValueT, info: ValidationInfo) -> ValueT:
    """`value`, a free-form JSON value, once it keeps the bounds; in a pass, counted.

    Raises:
        BeyondBoundsError: nested too deep, a container of more than
            :data:`schemas.json_bounds.MAX_ITEMS` items, an integer beyond 64
            bits, a float that is not finite, or no JSON value at all.
    """
    tally = info.context
    if type(tally) is PassTally:
        tally.nodes += _walk(value, tally.free_form_levels)
    return value


def bounded_float(value: ValueT, info: ValidationInfo) -> ValueT:
    """`value`, given for a float field, unless in a pass it is an integer beyond 64 bits.

    A float field reads an integer as a float, where the bounds refuse one
    beyond 64 bits (orjson keeps integers up to 2^64 - 1).

    Raises:
        BeyondBoundsError: in a pass, an integer beyond 64 bits.
    """
    if type(value) is int and type(info.context) is PassTally:
        _check_scalar(value)
    return value


def count_model(model: ModelT, info: ValidationInfo) -> ModelT:
    """`model`, whose JSON object's values are added to the tally in a pass.

    They are its members (fields given and extras) and the items of its arrays
    and maps of modelled values (``parts``); a nested model and a free-form
    value count their own. An after-validator of each model of a record
    (``model_validator(mode="after")(count_model)``).

    Raises:
        BeyondBoundsError: such an array or map holds more than
            :data:`schemas.json_bounds.MAX_ITEMS` items.
    """
    tally = info.context
    if type(tally) is PassTally:
        nodes = len(model.__pydantic_fields_set__)
        extra = model.__pydantic_extra__
        if extra:  # one name for two members: a field's alias and its name as an extra
            nodes += len(extra.keys() & type(model).model_fields.keys())
        for name in modelled_containers(type(model)):
            held = model.__dict__[name]
            if held is not None:
                if len(held) > MAX_ITEMS:
                    raise BeyondBoundsError
                nodes += len(held)
        tally.nodes += nodes
    return model


#: A free-form JSON value (:func:`bounded_json`).
BoundedJson = Annotated[Any, AfterValidator(bounded_json)]


def is_bounded(metadata: typing.Iterable[object]) -> bool:
    """Whether annotation `metadata` holds :func:`bounded_json`: a free-form value."""
    return any(isinstance(item, AfterValidator) and item.func is bounded_json for item in metadata)


@functools.cache
def modelled_containers(kind: type[BaseModel]) -> tuple[str, ...]:
    """The fields of `kind` holding an array or a map of modelled values (``parts``)."""
    return tuple(
        name
        for name, info in kind.model_fields.items()
        if not is_bounded(info.metadata) and _is_container(info.annotation)
    )


def _is_container(annotation: object) -> bool:
    """Whether `annotation` is a list, tuple or dict not free-form (or that or None)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_is_container(argument) for argument in typing.get_args(annotation))
    if origin is Annotated:
        metadata = annotation.__metadata__  # type: ignore[attr-defined]  # an Annotated
        return not is_bounded(metadata) and _is_container(typing.get_args(annotation)[0])
    return origin in (list, tuple, dict)


def _walk(value: object, levels: int) -> int:
    """The values inside `value`, once it keeps the bounds within `levels` levels of containers.

    Recursion is bounded by `levels`, at most :data:`schemas.json_bounds.MAX_DEPTH`.
    """
    items: typing.Iterable[object]
    if type(value) is dict:
        items = value.values()
    elif type(value) is list:
        items = value
    else:
        _check_scalar(value)
        return 0
    if levels < 1 or len(value) > MAX_ITEMS:
        raise BeyondBoundsError
    nodes = len(value)
    for item in items:
        kind = type(item)
        if kind is dict or kind is list:
            nodes += _walk(item, levels - 1)
        elif kind is not str:
            _check_scalar(item)
    return nodes


def _check_scalar(value: object) -> None:
    if type(value) is int:
        if not INT64_MIN <= value <= INT64_MAX:
            raise BeyondBoundsError
    elif type(value) is float:
        if not math.isfinite(value):
            raise BeyondBoundsError
    elif not (type(value) is str or type(value) is bool or value is None):
        raise BeyondBoundsError  # not what a JSON parser makes
