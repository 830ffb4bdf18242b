"""The numbers a record may carry: strict, finite and within 64 bits. Pure.

Lax pydantic turns ``"inf"`` into an infinite float and ``"99999999999999999999"``
into an integer beyond 64 bits; both decode, and then encoding the record
again fails or writes ``null``. Every number field of a topic record is one of
these aliases instead, so what decodes can be encoded again:

* no strings, no booleans where numbers are meant (``"1"``, ``true``);
* floats finite (an integer is accepted and read as a float, as JSON means);
* integers within the signed 64-bit range, and counts and offsets ``>= 0``.

Each alias is a field type, not a model setting, so tuples still validate
from JSON arrays (a strict model would refuse them).
"""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import AllowInfNan, BeforeValidator, Field, Strict

from schemas.json_bounds import INT64_MAX
from schemas.keys import Offset
from schemas.one_pass import bounded_float

#: The most tokens one model call may report: genai's ``UsageMetadata``
#: counts are 32-bit. Keeping each below 2^31 keeps a session's totals below
#: 2^63 for up to 2^32 events, so summing them never leaves 64 bits.
MAX_TOKEN_COUNT: Final = 2**31 - 1

FiniteFloat = Annotated[float, Strict(), AllowInfNan(False), BeforeValidator(bounded_float)]
"""A finite float (ADK's timestamps are float seconds); an integer is read as a float.

In the codec's one pass, an integer beyond 64 bits is refused (:mod:`schemas.one_pass`)."""

Count = Annotated[int, Strict(), Field(ge=0, le=INT64_MAX)]
"""A non-negative 64-bit integer: how many of something (versions, invocations, items)."""

TokenCount = Annotated[int, Strict(), Field(ge=0, le=MAX_TOKEN_COUNT)]
"""Tokens one model call reported, as genai's 32-bit counts."""

LogOffset = Annotated[Offset, Strict(), Field(ge=0, le=INT64_MAX)]
"""A record's position in its partition, as Kafka gives it: ``>= 0``, 64 bits."""
