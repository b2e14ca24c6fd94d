"""Realistic tool calls for benchmarks: GenAI-style names and ~200-byte JSON arguments."""

from __future__ import annotations

import random

from toolscore.scorers import ToolCall

__all__ = ["TOOLS", "make_args", "make_calls"]

TOOLS = ("search_flights", "get_weather", "book_hotel", "lookup_user", "send_email", "calculator", "fetch_url")


def make_args(rng: random.Random) -> dict[str, object]:
    """About 200 bytes once serialized, with nesting and mixed value types, like real tool arguments."""
    return {
        "query": f"flights from {rng.choice(['LIS', 'SFO', 'NRT'])} to {rng.choice(['JFK', 'CDG', 'BER'])}",
        "date": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "passengers": rng.randint(1, 4),
        "filters": {"max_price": rng.randint(100, 900), "cabin": rng.choice(["economy", "business"]), "stops": [0, 1]},
        "currency": "EUR",
        "user_id": f"u-{rng.randint(1000, 9999)}",
    }


def make_calls(n: int, seed: int = 7) -> list[ToolCall]:
    rng = random.Random(seed)
    return [
        ToolCall(name=rng.choice(TOOLS), args=make_args(rng), args_state="value", call_id=f"call_{i}") for i in range(n)
    ]
