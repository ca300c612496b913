"""Errors of the version catalog.

Kafka signals bad versions and feature levels with IllegalArgumentException and a fixed
text; tools print those texts to users, so the message of each error here is exactly
Kafka's text and nothing else. Catalog problems (a broken data or user file) carry the
name of the rule that was broken.
"""

from __future__ import annotations

from kraftsim.errors import KraftsimError, UsageError


class VersionsError(KraftsimError, ValueError):
    """Base of every error raised by kraftsim.versions."""


class IllegalArgument(VersionsError):
    """Kafka's IllegalArgumentException: the message is Kafka's text verbatim."""


class UnknownRelease(IllegalArgument, UsageError):
    """A release name the catalog does not know: invalid input (exit 2) wherever a command
    is given one, as a malformed flag is."""


class UnknownMetadataVersion(IllegalArgument):
    """A metadata.version string or level that the release line does not know."""


class UnknownFeature(IllegalArgument):
    """A feature name the catalog does not know (`Feature <name> not found.`)."""


class UnknownFeatureLevel(IllegalArgument):
    """A level the feature does not have, or not yet as production (`No feature:...`)."""


class FeatureDependencyError(IllegalArgument):
    """A feature level whose dependencies are not met (Feature.validateVersion)."""


class ToolFailure(VersionsError):
    """A one-line tool failure (Kafka's TerseFailure): print the message, exit 1."""


class CatalogError(VersionsError, UsageError):
    """A catalog that breaks a consistency rule; it is refused as a whole. A catalog is the
    user's input (`--catalog`, a scenario's `catalog`): invalid input, exit 2 in every command.

    `rule` is a stable id (for example ``kafka-2.5.3`` for the third rule of Kafka's
    Feature.validateDefaultValueAndLatestProductionValue); `text` is the rule's own
    message; `where` says which file or release line the problem was found in.
    """

    def __init__(self, rule: str, text: str, where: str = "catalog"):
        self.rule = rule
        self.text = text
        self.where = where
        super().__init__(f"Refusing {where}: rule {rule} broken: {text}")


class CatalogUnreadable(CatalogError):
    """A user's catalog file that cannot be read at all (missing, not a regular file, no
    permission): no rule of the catalog is involved, so the message names only the file and
    what is wrong with it."""

    def __init__(self, text: str, where: str = "catalog"):
        self.rule = "file"
        self.text = text
        self.where = where
        VersionsError.__init__(self, f"catalog file {where}: {text}")

    def __reduce__(self) -> tuple[type[CatalogUnreadable], tuple[str, str]]:
        return type(self), (self.text, self.where)


class CatalogTooLarge(CatalogError):
    """A catalog file with more entries than its limits allow: refused as invalid input (exit 2),
    before the work its size would cost."""
