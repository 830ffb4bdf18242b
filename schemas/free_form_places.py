"""Where a record type's free-form values sit: how deep they may nest, each walked. Pure.

Read once from the models, for the codec's one pass (:mod:`schemas.one_pass`):
a free-form value may span as many levels of containers as the deepest place
one can sit leaves below :data:`schemas.json_bounds.MAX_DEPTH` (the record is
level 1). The reading also proves that every free-form place of the type is
walked by the pass (typed :data:`schemas.one_pass.BoundedJson`, extras
included): a place that is not makes :func:`free_form_levels` raise, so the
pass cannot admit an unchecked value.

Example: an `events` record's deepest free-form place is a function call's
``args`` in a summary (envelope 1, event 2, actions 3, compaction 4,
compactedContent 5, parts 6, part 7, functionCall 8, args 9), so free-form
values may span 64 - 9 + 1 = 56 levels.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal, get_type_hints

from pydantic import BaseModel

from schemas.json_bounds import MAX_DEPTH
from schemas.one_pass import is_bounded


def free_form_levels(root: type[BaseModel]) -> int:
    """The levels a free-form value of a `root` record may span, wherever it sits.

    Raises:
        TypeError: a place of `root` holds a value the pass does not walk
            (``Any`` without :data:`schemas.one_pass.BoundedJson`, extras not
            declared as it), a type this reading does not know, or a model
            inside itself; or a place is deeper than the bounds allow.
    """
    reading = _Reading()
    reading.model(root, 1, ())
    if max(reading.free_form, reading.modelled) > MAX_DEPTH:
        raise TypeError(f"{root.__name__} has places deeper than {MAX_DEPTH} levels")
    return MAX_DEPTH - reading.free_form + 1


class _Reading:
    """One reading of a model tree: the deepest places met on the way.

    Attributes:
        free_form: The deepest level at which a free-form value sits.
        modelled: The deepest level of a modelled container (an object or an array).
    """

    def __init__(self) -> None:
        self.free_form = 1
        self.modelled = 1

    def model(self, kind: type[BaseModel], level: int, inside: tuple[type, ...]) -> None:
        """Read a `kind` object at `level`."""
        if kind in inside:
            raise TypeError(f"{kind.__name__} holds itself")
        inside = (*inside, kind)
        self.modelled = max(self.modelled, level)
        for info in kind.model_fields.values():
            if is_bounded(info.metadata):
                self.free_form = max(self.free_form, level + 1)
            else:
                self.value(info.annotation, level + 1, inside)
        if kind.model_config.get("extra") == "allow":
            extras = get_type_hints(kind, include_extras=True).get("__pydantic_extra__")
            values = typing.get_args(extras)[1] if extras is not None else Any
            if not is_bounded(getattr(values, "__metadata__", ())):
                raise TypeError(f"{kind.__name__} keeps extras the pass does not walk")
            self.free_form = max(self.free_form, level + 1)

    def value(self, annotation: object, level: int, inside: tuple[type, ...]) -> None:
        """Read a value of `annotation` at `level`."""
        origin = typing.get_origin(annotation)
        arguments = typing.get_args(annotation)
        if origin is Annotated:
            if is_bounded(annotation.__metadata__):  # type: ignore[attr-defined]  # Annotated
                self.free_form = max(self.free_form, level)
            else:
                self.value(arguments[0], level, inside)
        elif origin in (typing.Union, types.UnionType):
            for argument in arguments:
                self.value(argument, level, inside)
        elif origin in (list, tuple, dict):
            self.modelled = max(self.modelled, level)
            for item in arguments[1:] if origin is dict else arguments:
                if item is not ...:
                    self.value(item, level + 1, inside)
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            self.model(annotation, level, inside)
        elif isinstance(annotation, typing.NewType):
            self.value(annotation.__supertype__, level, inside)
        elif origin is not Literal and annotation not in (str, int, float, bool, type(None)):
            raise TypeError(f"the pass does not walk a value of {annotation!r}")
