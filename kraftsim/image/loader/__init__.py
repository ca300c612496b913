"""Kafka's `image.loader`: committed batches and snapshots in, published images out.

`metadata_loader` is the MetadataLoader (transactions, snapshot loads, catch-up,
metadata.version changes); `loading` loads files (a log directory, a segment, a
snapshot, a bootstrap file) through it.
"""
