"""How each Kafka release's metadata shell prints what it prints.

The tree and its leaves are the same in every release except for the few points below,
each read off the real tool (`kafka-metadata-shell` of 3.7.2, 3.8.1, 3.9.1, 4.0.2, 4.1.2,
4.2.0 and 4.3.1 on the same snapshots; 3.6.2's, and the registrations' texts in the jars of
3.3.2 to 3.6.2). Releases between two measured ones take the older one's style; 4.4.0, whose
kafka-shell Maven Central does not serve, prints as 4.3.1.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraftsim.versions import release_name_key

#: The commit id each measured release's /local/commitId shows (AppInfoParser.getCommitId());
#: 3.3.2 to 3.5.2, 3.9.2, 4.2.1 and 4.2.2 read from their kafka-clients jars' kafka-version.properties.
COMMIT_IDS = {
    "3.3.2": "b66af662e61082cb",
    "3.4.1": "8a516edc2755df89",
    "3.5.2": "8f0b0b0d0466632b",
    "3.6.2": "c4deed513057c94e",
    "3.7.2": "79a8f2b5f44f9d5a",
    "3.8.1": "70d6ff42debf7e17",
    "3.9.1": "f745dfdcee2b9851",
    "3.9.2": "5e9866f43ab8e7e4",
    "4.0.2": "5d0fe56677f97d95",
    "4.1.2": "c82fd9b934b4c1e6",
    "4.2.0": "a18251bae0b825c6",
    "4.2.1": "92f61c44867f39dc",
    "4.2.2": "c5e942859576203e",
    "4.3.1": "26b251a451ce941d",
}

#: Kafka's AppInfoParser answer when a build records no commit id.
UNKNOWN_COMMIT = "unknown"


@dataclass(frozen=True)
class ShellStyle:
    """The release-dependent parts of the shell's output."""

    release: str
    #: /image/cluster/brokers/<id> and /image/cluster/controllers/<id> (3.7 on, KIP-919) rather
    #: than the brokers' ids right under /image/cluster (3.3 to 3.6).
    cluster_by_role: bool
    #: BrokerRegistration's toString names isMigratingZkBroker (3.4 on).
    broker_zk_migration: bool
    #: BrokerRegistration's directories, PartitionRegistration's directories, elr and
    #: lastKnownElr (3.7 on: JBOD, KIP-858, and ELR, KIP-966).
    jbod_and_elr: bool
    #: /image/acls/byId/<id> (3.9 on) rather than /image/acls/<id> (3.7, 3.8).
    acls_by_id: bool
    #: /image/features/metadataVersion prints an Optional ("Optional[4.0-IV3]", 4.0 on).
    mv_optional: bool
    #: /image/features/zkMigrationState: "leaf" (a file saying NONE, 3.x), "listed" (named by
    #: `ls` but not there: cat says no such file, find fails; 4.0 and 4.1) or "absent" (4.2 on).
    zk_migration: str
    #: StandardAcl is a Java record: `StandardAcl[...]` rather than `StandardAcl(...)` (4.2 on).
    acl_record: bool
    #: BrokerRegistration's toString ends with cordonedDirectories (KIP-1066, 4.3 on).
    cordoned: bool
    #: `tree` passes over a child that is listed but not there (4.0 on); 3.x throws Java's
    #: NullPointerException there.
    tree_skips_missing: bool
    #: --snapshot is required and described as "The metadata snapshot file to read." (4.1 on).
    snapshot_required: bool

    @property
    def commit_id(self) -> str:
        return COMMIT_IDS.get(self.release, UNKNOWN_COMMIT)


def style_for(release: str) -> ShellStyle:
    """The shell's style for a Kafka release named as Kafka names it ("3.9.1")."""
    v = release_name_key(release)[:2]
    return ShellStyle(
        release=release,
        cluster_by_role=v >= (3, 7),
        broker_zk_migration=v >= (3, 4),
        jbod_and_elr=v >= (3, 7),
        acls_by_id=v >= (3, 9),
        mv_optional=v >= (4, 0),
        zk_migration="leaf" if v < (4, 0) else "listed" if v < (4, 2) else "absent",
        acl_record=v >= (4, 2),
        cordoned=v >= (4, 3),
        tree_skips_missing=v >= (4, 0),
        snapshot_required=v >= (4, 1),
    )
