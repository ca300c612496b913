"""What a metadata.version lets a node write and send, and what a downgrade loses.

All answers come from one table of *steps* per record type, request and capability
(`since` level → value). Nothing here knows individual versions: a downgrade's losses
are simply the steps that lie between the two levels.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraftsim.versions.errors import IllegalArgument
from kraftsim.versions.metadata_version import MetadataVersion


@dataclass(frozen=True)
class Capability:
    """A named ability that exists from level `since` on."""

    name: str
    since: int
    kind: str  # "metadata" or "behaviour"
    doc: str = ""


@dataclass(frozen=True)
class Versioned:
    """A record type or request: available from `since`, version steps (level, version)."""

    name: str
    since: int
    steps: tuple[tuple[int, int], ...]
    unsupported: str | None = None
    doc: str = ""

    def version_at(self, level: int, hidden: frozenset[int] = frozenset()) -> int | None:
        """The highest version usable at `level`, None before `since`; steps at `hidden`
        levels (placeholders in the asking release) do not exist."""
        found = None
        for since, version in self.steps:
            if since <= level and since not in hidden:
                found = version
        return found


@dataclass(frozen=True)
class DowngradeLosses:
    """What metadata written at `source` could not be written at `target`."""

    source: MetadataVersion
    target: MetadataVersion
    record_types: tuple[str, ...]
    record_versions: tuple[tuple[str, int, int], ...]  # (record, version at source, at target)
    capabilities: tuple[str, ...]
    behaviours: tuple[str, ...]  # behaviour gates that switch off; nothing is lost with them
    docs: tuple[tuple[str, str], ...] = ()  # record type / capability -> what it holds, for the report

    @property
    def lossless(self) -> bool:
        """True when nothing representable at `source` is lost at `target`."""
        return not (self.record_types or self.record_versions or self.capabilities)

    def lines(self) -> list[str]:
        """A human-readable report, one loss per line."""
        head = f"Downgrade of metadata.version from {self.source} to {self.target}"
        if self.lossless:
            out = [f"{head} is lossless."]
        else:
            out = [f"{head} loses:"]
            docs = dict(self.docs)
            out += [f"  record type {r} cannot be written" + (f": {docs[r]}" if docs.get(r) else "")
                    for r in self.record_types]
            out += [f"  {r} goes from version {a} to {b}" for r, a, b in self.record_versions]
            out += [f"  capability {c}" + (f": {docs[c]}" if docs.get(c) else "") for c in self.capabilities]
        out += [f"  behaviour {b} switches off" for b in self.behaviours]
        return out


class GateTable:
    """Record types, record versions, requests and capabilities by level."""

    def __init__(self, records: dict[str, Versioned], requests: dict[str, Versioned], capabilities: dict[str, Capability]):
        self.records = records
        self.requests = requests
        self.capabilities = capabilities

    def supports(self, capability: str, mv: MetadataVersion, hidden: frozenset[int] = frozenset()) -> bool:
        """Whether the capability exists at `mv` (`hidden`: placeholder levels of the asking release)."""
        cap = self.capabilities.get(capability)
        if cap is None:
            raise IllegalArgument(f"Unknown capability {capability}. Known capabilities are: {', '.join(sorted(self.capabilities))}")
        return mv.level >= cap.since and cap.since not in hidden

    def record_types_at(self, mv: MetadataVersion, hidden: frozenset[int] = frozenset()) -> tuple[str, ...]:
        return tuple(name for name, rec in self.records.items() if mv.level >= rec.since and rec.since not in hidden)

    def record_version(self, record: str, mv: MetadataVersion, hidden: frozenset[int] = frozenset()) -> int:
        """The highest version of `record` a writer may use at `mv`."""
        rec = self.records.get(record)
        if rec is None:
            raise IllegalArgument(f"Unknown record type {record}")
        version = rec.version_at(mv.level, hidden)
        if version is None:
            template = rec.unsupported or "{record} is not supported in MetadataVersion {mv}"
            raise IllegalArgument(template.format(record=record, mv=mv.version))
        return version

    def request_version(self, api: str, mv: MetadataVersion) -> int:
        """The version of request `api` a node sends at `mv`."""
        req = self.requests.get(api)
        version = None if req is None else req.version_at(mv.level)
        if version is None:
            raise IllegalArgument(f"No {api} request version is defined for metadata.version {mv}")
        return version

    def additions_at(self, level: int) -> list[str]:
        """Metadata that first becomes representable at exactly `level` (for consistency checks)."""
        out = [f"record type {n}" for n, r in self.records.items() if r.since == level]
        out += [f"{n} version {v}" for n, r in self.records.items() for s, v in r.steps if s == level and s != r.since]
        out += [f"capability {n}" for n, c in self.capabilities.items() if c.since == level and c.kind == "metadata"]
        return out

    def downgrade_losses(self, source: MetadataVersion, target: MetadataVersion,
                         hidden: frozenset[int] = frozenset()) -> DowngradeLosses:
        """Everything that exists at `source` but not at `target` (empty when target >= source)."""
        hi, lo = source.level, target.level

        def lost(since: int) -> bool:
            return lo < since <= hi and since not in hidden

        versions = []
        for name, rec in self.records.items():
            a, b = rec.version_at(hi, hidden), rec.version_at(lo, hidden)
            if a is not None and b is not None and a > b:
                versions.append((name, a, b))
        record_types = tuple(n for n, r in self.records.items() if lost(r.since))
        capabilities = tuple(n for n, c in self.capabilities.items() if c.kind == "metadata" and lost(c.since))
        docs = tuple((n, self.records[n].doc) for n in record_types if self.records[n].doc)
        docs += tuple((n, self.capabilities[n].doc) for n in capabilities if self.capabilities[n].doc)
        return DowngradeLosses(
            source=source,
            target=target,
            record_types=record_types,
            record_versions=tuple(versions),
            capabilities=capabilities,
            behaviours=tuple(n for n, c in self.capabilities.items() if c.kind != "metadata" and lost(c.since)),
            docs=docs,
        )
