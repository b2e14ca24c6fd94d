"""The tools every capture's agents call, and the recorder that notes what each tool really received.

The tools are plain Python functions with Google-style docstrings and runtime type hints, so every
framework can turn them into its own tool objects (schemas from the signature, descriptions from the
docstring). This module deliberately does not use `from __future__ import annotations`: several
frameworks read `__annotations__` directly and expect types, not strings.

`Recorder.wrap(tool)` returns a function with the same name, signature and docstring that notes the
arguments and whether the tool raised, then calls the tool. Capture truth is checked against these
notes, never against the spans under test.
"""

import functools
import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "TOOLS",
    "RecordedCall",
    "Recorder",
    "ToolFailure",
    "get_stock_price",
    "get_time",
    "get_weather",
    "search_flights",
]

_TEMPERATURES_C = {
    "Paris": 21,
    "London": 15,
    "Tokyo": 18,
    "Lisbon": 24,
    "Oslo": 4,
    "Rome": 26,
    "Berlin": 12,
    "Madrid": 28,
}
_LOCAL_TIMES = {
    "Asia/Tokyo": "2026-11-28T22:00:00+09:00",
    "Europe/Paris": "2026-11-28T14:00:00+01:00",
    "Europe/Rome": "2026-11-28T14:00:00+01:00",
    "America/New_York": "2026-11-28T08:00:00-05:00",
}
_PRICES = {"SONY": 92.4, "AAPL": 231.5, "NVDA": 141.2, "MSFT": 512.8}


class ToolFailure(ValueError):
    """What a tool raises for an input it does not know (the scenarios' scripted failures)."""


def get_weather(city: str, unit: str = "celsius") -> str:
    """Get the current weather for a city.

    Args:
        city: The city name, for example "Paris".
        unit: The temperature unit, "celsius" or "fahrenheit".
    """
    if city not in _TEMPERATURES_C:
        raise ToolFailure(f"unknown city: {city}")
    celsius = _TEMPERATURES_C[city]
    if unit == "fahrenheit":
        return f"{round(celsius * 9 / 5 + 32)}F and sunny in {city}"
    return f"{celsius}C and sunny in {city}"


def get_time(timezone: str) -> str:
    """Get the current local time in a timezone.

    Args:
        timezone: An IANA timezone name, for example "Asia/Tokyo".
    """
    if timezone not in _LOCAL_TIMES:
        raise ToolFailure(f"unknown timezone: {timezone}")
    return _LOCAL_TIMES[timezone]


def get_stock_price(symbol: str) -> str:
    """Get the latest stock price for a ticker symbol.

    Args:
        symbol: The ticker symbol, for example "SONY".
    """
    if symbol not in _PRICES:
        raise ToolFailure(f"unknown symbol: {symbol}")
    return f"{symbol}: {_PRICES[symbol]} USD"


def search_flights(  # noqa: PLR0917 (the scenario's many-parameter tool, called by keyword)
    origin: str,
    destination: str,
    passengers: list[dict],
    depart_date: str,
    max_price: float | None = None,
    direct_only: bool = False,
    cabin: str | None = None,
    filters: dict | None = None,
) -> str:
    """Search flights between two airports.

    Args:
        origin: IATA code of the departure airport.
        destination: IATA code of the arrival airport.
        passengers: One object per traveller: name, age, and an optional seat object.
        depart_date: The departure date, YYYY-MM-DD.
        max_price: The highest acceptable price in EUR, or null for no limit.
        direct_only: Whether to list only direct flights.
        cabin: The cabin class, or null for any.
        filters: Extra filters: airlines (a list), max_stops (a number), and so on.
    """
    return f"2 flights {origin}->{destination} on {depart_date} for {len(passengers)} passengers, from 899.0 EUR"


TOOLS: dict[str, Callable[..., Any]] = {f.__name__: f for f in (get_weather, get_time, get_stock_price, search_flights)}
"""Every tool the scenarios use, by name."""


@dataclass(frozen=True)
class RecordedCall:
    """One call a tool received: its arguments by name (as passed, and with defaults filled in)."""

    name: str
    args: dict[str, Any]
    full_args: dict[str, Any]
    error: str | None = None


@dataclass
class Recorder:
    """Notes every call of the tools it wrapped, in the order the calls started (thread-safe)."""

    calls: list[RecordedCall] = field(default_factory=list)
    signatures: dict[str, inspect.Signature] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def wrap(self, tool: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
        """`tool` with the same signature and docstring, noting each call (async tools stay async)."""
        tool_name = name or tool.__name__
        signature = inspect.signature(tool)
        self.signatures[tool_name] = signature

        def note(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
            bound = signature.bind(*args, **kwargs)
            given = dict(bound.arguments)
            bound.apply_defaults()
            with self._lock:
                self.calls.append(RecordedCall(tool_name, given, dict(bound.arguments)))
                return len(self.calls) - 1

        def failed(index: int, exc: BaseException) -> None:
            with self._lock:
                call = self.calls[index]
                self.calls[index] = RecordedCall(call.name, call.args, call.full_args, f"{type(exc).__name__}: {exc}")

        if inspect.iscoroutinefunction(tool):

            @functools.wraps(tool)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                index = note(args, kwargs)
                try:
                    return await tool(*args, **kwargs)
                except BaseException as exc:
                    failed(index, exc)
                    raise

            wrapper: Callable[..., Any] = async_wrapper
        else:

            @functools.wraps(tool)
            def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
                index = note(args, kwargs)
                try:
                    return tool(*args, **kwargs)
                except BaseException as exc:
                    failed(index, exc)
                    raise

            wrapper = sync_wrapper
        wrapper.__name__ = tool_name
        return wrapper

    def tools(self, names: list[str] | tuple[str, ...]) -> list[Callable[..., Any]]:
        """The named tools from `TOOLS`, wrapped."""
        return [self.wrap(TOOLS[n]) for n in names]

    def full_args(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """`args` for tool `name` with its defaults filled in (as given when the tool is unknown)."""
        signature = self.signatures.get(name)
        if signature is None:
            return dict(args)
        bound = signature.bind_partial(**args)
        bound.apply_defaults()
        return dict(bound.arguments)
