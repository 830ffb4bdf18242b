"""The example's tools: deterministic stand-ins for a weather service and a booking system."""

from __future__ import annotations

#: What the weather tool answers, by city (anything else: mild and cloudy).
_WEATHER = {"paris": "sunny, 21 C", "oslo": "snow, -3 C", "rome": "clear, 26 C"}


def get_weather(city: str) -> dict[str, str]:
    """The current weather of `city`.

    Args:
        city: The city's name, e.g. "Paris".
    """
    return {"city": city, "weather": _WEATHER.get(city.lower(), "mild and cloudy, 15 C")}


def book_table(restaurant: str, people: int) -> dict[str, object]:
    """Book a table for `people` at `restaurant`.

    Args:
        restaurant: The restaurant's name.
        people: How many guests.
    """
    code = sum(ord(c) for c in restaurant) * 7 + people
    return {"restaurant": restaurant, "people": people, "confirmation": f"T{code:05d}"}
