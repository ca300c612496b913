"""Kafka's `image.publisher`: what is done with published images, i.e. snapshots.

The SnapshotGenerator decides when a node writes a snapshot, the SnapshotEmitter writes
it as a `.checkpoint`, and `snapshot_create` writes one for any offset of a log.
"""
