"""Checking images: order-independent digests, structural diffs, and replay verification
(every image a log directory can give, re-derived and compared)."""
