"""`kraftsim storage`: Kafka's kafka-storage tool (kafka-facts §7.1), same flags and words.

`format` and `info` read the node from a Kafka server.properties (`--config/-c`), as Kafka
does; kraftsim also accepts the directories and node id directly (`--dir D ... --node-id N`,
see ServerConfig.for_directories for the node this stands for). Everything else (`--seed`,
`--bootstrap`, `--release`, `--catalog`) is kraftsim's own and changes no Kafka behaviour.
The logic lives in kraftsim.storage.formatter; this module only maps flags to calls.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random

from kraftsim.cli.common import add_catalog_options, catalog_from_args, kafka_tool, node_id, print_lines
from kraftsim.cli.kafka_usage import missing_subcommand, record_flags, refuse, release_line, unknown_flag
from kraftsim.errors import UsageError
from kraftsim.storage.bootstrap import read_bootstrap_dir
from kraftsim.storage import random_uuid
from kraftsim.storage import ServerConfig, read_server_config
from kraftsim.storage import storage_format, storage_info
from kraftsim.versions import UnknownMetadataVersion
from kraftsim.versions import feature_dependencies, version_mapping


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("storage", help="kafka-storage: format log directories, version mapping, feature dependencies")
    cmds = group.add_subparsers(dest="storage_command", metavar="SUBCOMMAND")
    cmds.required = True

    info = cmds.add_parser("info", help="Get information about the Kafka log directories on this node.")
    info.add_argument("--config", "-c", metavar="FILE", help="The Kafka configuration file to use.")
    info.add_argument("--dir", action="append", default=[], metavar="D",
                      help="a log directory to look at (repeatable; added to those of --config)")
    info.add_argument("--bootstrap", action="store_true",
                      help="kraftsim: also print each formatted directory's bootstrap metadata.version and features")
    add_catalog_options(info)
    info.set_defaults(run=kafka_tool(_run_info))

    fmt = cmds.add_parser("format", help="Format the Kafka log directories on this node.")
    fmt.add_argument("--config", "-c", metavar="FILE", help="The Kafka configuration file to use.")
    fmt.add_argument("--dir", action="append", default=[], metavar="D",
                     help="a log directory to format (repeatable); without --config the node is a combined "
                          "broker+controller with listener CONTROLLER://localhost:9093, the first --dir is its "
                          "metadata log directory, and its quorum is static unless -s, -I or -N is given")
    fmt.add_argument("--node-id", type=node_id, metavar="N", help="the node id (overrides node.id of --config)")
    fmt.add_argument("--cluster-id", "-t", required=True, help="The cluster ID to use.")
    fmt.add_argument("--add-scram", "-S", action="append", default=[], metavar="SCRAM_CREDENTIAL",
                     help="A SCRAM_CREDENTIAL to add to the __cluster_metadata log e.g. "
                          "'SCRAM-SHA-256=[name=alice,password=alice-secret]' "
                          "'SCRAM-SHA-512=[name=alice,iterations=8192,salt=\"N3E=\",saltedpassword=\"YCE=\"]'")
    fmt.add_argument("--ignore-formatted", "-g", action="store_true",
                     help="When this option is passed, the format command will skip over already formatted "
                          "directories rather than failing.")
    fmt.add_argument("--release-version", "-r", metavar="V",
                     help="The release version to use for the initial feature settings; default: the latest "
                          "production metadata.version of the release (see --release)")
    fmt.add_argument("--feature", "-f", action="append", default=[], metavar="FEATURE=LEVEL",
                     help="The setting to use for a specific feature, in feature=level format. "
                          "For example: `kraft.version=1`.")
    quorum = fmt.add_mutually_exclusive_group()
    quorum.add_argument("--standalone", "-s", action="store_true",
                        help="Used to initialize a controller as a single-node dynamic quorum.")
    quorum.add_argument("--no-initial-controllers", "-N", action="store_true",
                        help="Used to initialize a server without a dynamic quorum topology.")
    quorum.add_argument("--initial-controllers", "-I", metavar="VOTERS",
                        help="Used to initialize a server with a specific dynamic quorum topology. The argument is a "
                             "comma-separated list of id@hostname:port:directory. The same values must be used to "
                             "format all nodes. For example: 0@example.com:8082:JEXY6aqzQY-32P5TStzaFg,"
                             "1@example.com:8083:MvDxzVmcRsaTz33bUuRU6A,2@example.com:8084:07R5amHmR32VDA6jHkGbTA")
    fmt.add_argument("--seed", type=int, metavar="N",
                     help="kraftsim: seed the random directory ids and SCRAM salts (default: os.urandom); with "
                          "SOURCE_DATE_EPOCH set, formatting is byte-for-byte reproducible")
    add_catalog_options(fmt)
    record_flags(fmt, ("config", "cluster_id", "add_scram", "ignore_formatted", "release_version", "feature",
                       "standalone", "no_initial_controllers", "initial_controllers"))
    fmt.set_defaults(run=kafka_tool(_run_format))

    ru = cmds.add_parser("random-uuid", help="Print a random UUID.")
    ru.add_argument("--seed", type=int, metavar="N", help="kraftsim: seed the generator (default: os.urandom)")
    ru.set_defaults(run=kafka_tool(_run_random_uuid))

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


def _rng(args: argparse.Namespace) -> random.Random:
    return random.SystemRandom() if args.seed is None else random.Random(args.seed)


def _server_config(args: argparse.Namespace) -> ServerConfig:
    """The node: from --config (with --dir added and --node-id overriding), or from --dir/--node-id alone."""
    if "" in args.dir:  # (an empty path would format the current folder, which nobody named)
        raise UsageError("--dir: an empty path names no directory")
    dynamic = bool(args.standalone or args.no_initial_controllers or args.initial_controllers is not None)
    if args.config is None:
        return ServerConfig.for_directories(args.dir, -1 if args.node_id is None else args.node_id,
                                            dynamic_quorum=dynamic)
    config = read_server_config(args.config)
    if args.dir:
        config = dataclasses.replace(config, log_dirs=tuple(dict.fromkeys([*config.log_dirs, *args.dir])))
    if args.node_id is not None:
        config = dataclasses.replace(config, node_id=args.node_id)
    return config


def _run_format(args: argparse.Namespace) -> int:
    catalog = catalog_from_args(args)
    refused = refuse(unknown_flag("kafka-storage", "format", release_line(catalog), args))
    if refused is not None:
        return refused
    storage_format(
        catalog,
        _server_config(args),
        cluster_id=args.cluster_id,
        release_version=args.release_version,
        features=args.feature,
        standalone=args.standalone,
        initial_controllers=args.initial_controllers,
        no_initial_controllers=args.no_initial_controllers,
        add_scram=args.add_scram,
        ignore_formatted=args.ignore_formatted,
        rng=_rng(args),
    )
    return 0


def _run_info(args: argparse.Namespace) -> int:
    directories = set(args.dir)
    kraft_mode = True
    if args.config is not None:
        config = read_server_config(args.config)
        directories.update(config.directories)
        kraft_mode = bool(config.process_roles)
    lines, code = storage_info(directories, kraft_mode)
    for line in lines:
        print(line)
    if args.bootstrap:
        catalog = catalog_from_args(args)
        for d in sorted(directories):
            boot = read_bootstrap_dir(d) if os.path.isdir(d) else None
            if boot is None:
                continue
            try:
                mv = f" ({catalog.mv_from_level(boot.metadata_version_level)})"
            except UnknownMetadataVersion:
                mv = ""
            others = ", ".join(f"{k}={v}" for k, v in sorted(boot.feature_levels().items()) if k != "metadata.version")
            print(f"Found bootstrap metadata in {d}: metadata.version={boot.metadata_version_level}{mv}"
                  + (f", {others}" if others else ""))
    return int(code)


def _run_random_uuid(args: argparse.Namespace) -> int:
    print(random_uuid(_rng(args)))
    return 0


def _run_version_mapping(args: argparse.Namespace) -> int:
    catalog = catalog_from_args(args)
    refused = refuse(missing_subcommand("kafka-storage", "version-mapping", release_line(catalog)))
    if refused is not None:
        return refused
    return print_lines(version_mapping(catalog, args.release_version))


def _run_feature_dependencies(args: argparse.Namespace) -> int:
    catalog = catalog_from_args(args)
    refused = refuse(missing_subcommand("kafka-storage", "feature-dependencies", release_line(catalog)))
    if refused is not None:
        return refused
    # One argument at a time, as StorageTool's loop: the answers before a bad argument are printed.
    code = 0
    for arg in args.feature or []:
        code = print_lines(feature_dependencies(catalog, [arg], tool="storage"))
    return code
