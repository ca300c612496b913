"""Hash functions that give image/pmap.py's tries unusual shapes, shared by the tests that hold
the C code over those tries (pm_update, pm_build, the map readers) to the Python code."""

from __future__ import annotations

from kraftsim.image.pmap import hash_int


def colliding(k: int) -> int:
    """Few distinct hashes: leaves past the last level that grow, and deep tries."""
    return hash_int(k % 40)


def low_bits(k: int) -> int:
    """Hashes that differ only in their high bits: long paths of one-child nodes."""
    return (k & 0x3FF) << 50


def negative(k: int) -> int:
    """Negative hashes: Python's >> floors, so the walk's slots come from the sign bits."""
    return -1 - (hash_int(k) >> 2)


def past_64_bits(k: int) -> int:
    """Hashes wider than 64 bits: the C code declines them."""
    return ((hash_int(k) | 1) << 70) | 5
