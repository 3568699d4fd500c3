"""The seeds a simulation runs, as a command line gives them."""

from __future__ import annotations

import argparse

__all__ = ["parse_seeds"]


def parse_seeds(text: str) -> list[int]:
    """``"42-51"`` or ``"42,45,50"`` (or a mix of both) -> the list of seeds."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            low, _, high = part.strip().partition("-")
            seeds.extend(range(int(low), int(high or low) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds must look like 42-51 or 42,43: {text!r}") from None
    if not seeds:
        raise argparse.ArgumentTypeError("no seeds given")
    return seeds
