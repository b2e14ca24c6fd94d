"""Pairing calls with calls: the peers' greedy pairing and a maximum bipartite matching.

A pairing problem has *left* vertices (the calls that look for a partner, in order) and *right*
vertices (the calls they may take). Both functions return `(match_left, match_right)`: the right
vertex each left vertex took and the left vertex each right vertex was taken by, -1 for none.

`greedy_matching` is agentevals' (`trajectory/utils.py` `_is_trajectory_superset`, and the message
comparison of `trajectory/strict.py`): each left vertex, in order, takes the first free right vertex
among its options that fits, and keeps it. It does not matter which side leads: with options in index
order, the pairing is the one the right vertices' greedy pairing over the left ones finds. (Left vertex 0
takes its first fit, right vertex k. Led by the right side, right vertices 0..k-1 do not fit left vertex
0, so it is still free when right vertex k, which takes its first free fit, comes to it; what those
earlier right vertices took never involved left vertex 0. Without the two, the rest is the same
question.) Where fitting is not an equivalence (a containment rule, a per-key matcher, an expected call
without arguments under a rule) greedy pairing can miss a pairing that exists, and the order of the
calls can change the verdict. `max_matching` finds the most pairs there are, so neither repeats nor
order change the count. The `trajectory` scorer's `pairing` option chooses between them; the `f1`
scorer's optimal pairing uses `max_matching` too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

__all__ = ["Pairing", "greedy_matching", "max_matching", "paired"]

Pairing = Literal["greedy", "optimal"]
"""`greedy`: the peer's pairing (`greedy_matching`); `optimal`: a maximum matching (`max_matching`)."""


def greedy_matching(
    options: Sequence[Sequence[int]], fits: Callable[[int, int], bool], n_right: int
) -> tuple[list[int], list[int]]:
    """Each left vertex `i` in order takes the first right vertex of `options[i]` that is free and `fits(i, right)`.

    `fits` is asked only until a vertex is found, as the peer asks its matcher.
    """
    match_left = [-1] * len(options)
    match_right = [-1] * n_right
    for left, candidates in enumerate(options):
        for right in candidates:
            if match_right[right] < 0 and fits(left, right):
                match_left[left], match_right[right] = right, left
                break
    return match_left, match_right


def paired(
    pairing: Pairing, options: Sequence[Sequence[int]], fits: Callable[[int, int], bool], n_right: int
) -> tuple[list[int], list[int]]:
    """The pairs `pairing` chooses among `options` (left vertex -> the right vertices it may take, in order) by
    `fits(left, right)`: `greedy_matching`, which asks `fits` only as it goes, or `max_matching` of the options
    that fit."""
    if pairing == "greedy":
        return greedy_matching(options, fits, n_right)
    return max_matching(
        [[right for right in rights if fits(left, right)] for left, rights in enumerate(options)], n_right
    )


def _augment(start: int, adj: Sequence[Sequence[int]], match_left: list[int], match_right: list[int]) -> bool:
    """Breadth-first search for an augmenting path from free left vertex `start`; flips it if found."""
    reached_from: dict[int, int] = {}
    queue = [start]
    for left in queue:
        for right in adj[left]:
            if right in reached_from:
                continue
            reached_from[right] = left
            owner = match_right[right]
            if owner >= 0:
                queue.append(owner)
                continue
            free = right
            while True:  # flip the path back to `start`
                left_on_path = reached_from[free]
                previous = match_left[left_on_path]
                match_left[left_on_path], match_right[free] = free, left_on_path
                if left_on_path == start:
                    return True
                free = previous
    return False


def max_matching(adj: Sequence[Sequence[int]], n_right: int) -> tuple[list[int], list[int]]:
    """Maximum bipartite matching; `adj[i]` lists the right vertices left vertex `i` may take.

    Left vertices are tried in order and a matched one stays matched, so the matched left set is the
    earliest possible.
    """
    match_left = [-1] * len(adj)
    match_right = [-1] * n_right
    for left in range(len(adj)):
        if adj[left]:
            _augment(left, adj, match_left, match_right)
    return match_left, match_right
