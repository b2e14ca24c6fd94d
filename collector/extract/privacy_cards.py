"""Card numbers in text: the Luhn check that confirms the default `card_number` pattern's matches.

The pattern (`privacy.DEFAULT_PATTERNS`) finds 13 to 19 digits with spaces or dashes between; a match is
masked only when its digits pass the Luhn check card numbers carry, so an order id of 16 digits is kept.
"""

from __future__ import annotations

__all__ = ["has_card", "luhn_valid"]


def luhn_valid(text: str) -> bool:
    """Whether the digits of `text` pass the Luhn check card numbers carry."""
    digits = [int(c) for c in text if c.isdigit()]
    if len(digits) < 13:
        return False
    total = 0
    for i, digit in enumerate(reversed(digits)):
        doubled = digit * 2 if i % 2 else digit
        total += doubled - 9 if doubled > 9 else doubled
    return total % 10 == 0


def has_card(text: str) -> bool:
    """Whether a run of 13 to 19 digits made of whole groups of a chain (groups split by a space or a dash) passes
    the Luhn check: a card number written beside other digits (`4111 1111 1111 1111 12/25`, `pay 2
    4111-1111-1111-1111`) is found, where the chain's digits taken together fail it. Linear in the text: each
    run's Luhn sum is a difference of prefix sums, so a sender's `1 1 1 ...` costs no more than its length."""
    for digits, starts in _digit_chains(text):
        # prefix[parity][k]: the Luhn sum of digits[:k] for a run whose last digit has index parity `parity`
        prefix = ([0], [0])
        for position, digit in enumerate(digits):
            doubled = digit * 2 - 9 if digit > 4 else digit * 2
            for parity in (0, 1):
                prefix[parity].append(prefix[parity][-1] + (doubled if position % 2 != parity else digit))
        ends = [*starts[1:], len(digits)]
        for first, start in enumerate(starts):
            for last in range(first, min(first + 19, len(ends))):  # 19 groups of a digit at most
                end = ends[last]
                if end - start > 19:
                    break
                if end - start >= 13:
                    sums = prefix[(end - 1) % 2]
                    if (sums[end] - sums[start]) % 10 == 0:
                        return True
    return False


def _digit_chains(text: str) -> list[tuple[list[int], list[int]]]:
    """Each chain of digit groups of `text` (only spaces or dashes between two groups): its digits, and the
    index in them where each group starts."""
    chains: list[tuple[list[int], list[int]]] = []
    digits: list[int] = []
    starts: list[int] = []
    in_group = False
    for char in text:
        if "0" <= char <= "9":
            if not in_group:
                starts.append(len(digits))
                in_group = True
            digits.append(ord(char) - 48)
            continue
        in_group = False
        if char not in " -" and digits:
            chains.append((digits, starts))
            digits, starts = [], []
    if digits:
        chains.append((digits, starts))
    return chains
