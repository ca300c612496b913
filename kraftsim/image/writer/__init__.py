"""Kafka's `image.writer`: an image written back as records at a metadata.version.

`image_writer` emits the records (lossless, or lossy with a loss report from `loss`);
`mv_change` rewrites an image when metadata.version changes (Kafka's ImageReWriter).
"""
