"""Errors of the image layer, with Kafka's texts where Kafka has them.

Replay errors mirror the RuntimeException / IllegalStateException / IllegalArgumentException
texts of Kafka's MetadataDelta and its component deltas, so a user replaying a bad log sees
the words a Kafka broker would log for the same record.
"""

from __future__ import annotations

from kraftsim.errors import KraftsimError


class ImageError(KraftsimError):
    """Base of every error raised while building or writing images."""


class MetadataReplayError(ImageError):
    """A record cannot be applied to the image (Kafka throws from replay() for these)."""


class UnsupportedMetadataVersionError(MetadataReplayError):
    """A FeatureLevelRecord names a metadata.version level the catalog does not know."""


def unwritable_text(metadata_version: str, loss: str, version_text: str = "metadata.version") -> str:
    """Kafka's UnwritableMetadataException message; `version_text` is how the writer's release
    names the version ("metadata version" in 3.4 to 3.7: policy unwritable_version_text)."""
    return f"Metadata has been lost because the following could not be represented in {version_text} " \
           f"{metadata_version}: {loss}"


class UnwritableMetadataException(ImageError):
    """Kafka's UnwritableMetadataException: the image holds something `mv` cannot represent."""

    def __init__(self, metadata_version: str, loss: str, version_text: str = "metadata.version"):
        self.metadata_version = metadata_version
        self.loss = loss
        super().__init__(unwritable_text(metadata_version, loss, version_text))
