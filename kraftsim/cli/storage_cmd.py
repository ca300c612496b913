"""`kraftsim storage`: Kafka's kafka-storage tool (kafka-facts §7.1), same flags and words."""

from __future__ import annotations

import argparse

from kraftsim.cli.common import add_catalog_options, catalog_from_args, kafka_tool
from kraftsim.versions.tool_text import feature_dependencies, version_mapping


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("storage", help="kafka-storage: format log directories, version mapping, feature dependencies")
    cmds = group.add_subparsers(dest="storage_command", metavar="SUBCOMMAND")
    cmds.required = True

    vm = cmds.add_parser("version-mapping", help="the feature levels a metadata.version / release version maps to")
    vm.add_argument("--release-version", "-r", metavar="V",
                    help="a metadata.version or release (e.g. 3.9, 4.0-IV3); default: the latest production one")
    add_catalog_options(vm)
    vm.set_defaults(run=kafka_tool(_run_version_mapping))

    fd = cmds.add_parser("feature-dependencies", help="what each given feature level depends on")
    fd.add_argument("--feature", "-f", action="append", required=True, metavar="FEATURE=LEVEL",
                    help="a feature and level, e.g. eligible.leader.replicas.version=1 (repeatable)")
    add_catalog_options(fd)
    fd.set_defaults(run=kafka_tool(_run_feature_dependencies))


def _run_version_mapping(args: argparse.Namespace) -> int:
    for line in version_mapping(catalog_from_args(args), args.release_version):
        print(line)
    return 0


def _run_feature_dependencies(args: argparse.Namespace) -> int:
    for line in feature_dependencies(catalog_from_args(args), args.feature, tool="storage"):
        print(line)
    return 0
