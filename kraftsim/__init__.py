"""kraftsim: a simulator of Apache Kafka's KRaft metadata layer.

It reads and writes Kafka's real metadata files byte for byte, applies Kafka's rules for
metadata.version and feature upgrades and downgrades, and replays logs into images.
"""

__version__ = "0.1.0"
