"""kraftsim: a simulator of Apache Kafka's KRaft metadata layer.

It reads and writes Kafka's real metadata files byte for byte, applies Kafka's rules for
metadata.version and feature upgrades and downgrades, and replays logs into images.
"""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """`kraftsim.serve`: imported on first use (it brings the simulator and asyncio)."""
    if name == "serve":
        from importlib import import_module
        value = import_module("kraftsim.wire.api").serve
        globals()["serve"] = value
        return value
    raise AttributeError(f"module 'kraftsim' has no attribute {name!r}")
