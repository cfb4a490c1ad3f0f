"""`kipwire-broker serve`: run a mock cluster until interrupted, one log line per client request.

Configuration comes as Kafka takes it: `--config-file server.properties` (unknown keys warned
about, as Kafka logs them), then `--config KEY=VALUE` (repeatable, wins over the file; an unknown
key or a bad value exits 2). The banner prints the bootstrap servers first, then every listener,
the controller's port and the metrics and control URLs.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import trio

from .cluster import Cluster, ClusterError, open_cluster
from .control import serve_control
from .controller import Semantics
from .controller.broker_configs import (
    IGNORED,
    KNOWN_NAMES,
    ConfigError,
    broker_config_problem,
    cluster_config,
)
from .metrics import serve_metrics
from .processes import open_process_cluster
from .properties import PropertiesError, read_properties
from .security.config import SecurityConfig

LOG_LEVELS = ("debug", "info", "warning", "error")
ELR_FEATURE = "eligible.leader.replicas.version"
log = logging.getLogger("kipwire.mockbroker.cli")


def presets() -> dict[str, Semantics]:
    """Every named Semantics preset (KAFKA_3_9 ... KIP), by name."""
    return {
        name: value
        for name, value in vars(Semantics).items()
        if name.isupper() and isinstance(value, Semantics)
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kipwire-broker", description="A mock Kafka (KRaft) cluster on 127.0.0.1."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run a cluster until interrupted")
    serve.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    serve.add_argument(
        "--port",
        type=int,
        default=0,
        help="port of broker 1, the others follow (default: ephemeral ports)",
    )
    serve.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker config, as in server.properties (repeatable)",
    )
    serve.add_argument(
        "--config-file", metavar="FILE", help="broker configs in Kafka's properties format"
    )
    serve.add_argument(
        "--semantics",
        choices=sorted(presets()),
        default="KAFKA_4_4",
        metavar="PRESET",
        help="the Semantics preset: the Kafka release imitated, or KIP (default KAFKA_4_4)",
    )
    serve.add_argument(
        "--elr",
        choices=("on", "off"),
        help="eligible leader replicas (default: as the preset's release has them)",
    )
    serve.add_argument(
        "--data-dir",
        metavar="DIR",
        help="keep logs, metadata and offsets in DIR (log.dirs) across restarts",
    )
    serve.add_argument("--record", metavar="FILE", help="write every connection to a pcapng")
    serve.add_argument(
        "--record-clients-only",
        action="store_true",
        help="record client connections only, not the nodes' own traffic",
    )
    serve.add_argument(
        "--record-max-bytes",
        type=int,
        metavar="N",
        help="start a new file (FILE1, FILE2, ...) once one holds N bytes, as tcpdump -C",
    )
    serve.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="info: one line per client request (default); debug: more",
    )
    serve.add_argument(
        "--log-internal",
        action="store_true",
        help="also log the nodes' own requests (heartbeats, metadata and replica fetches)",
    )
    serve.add_argument("--quiet", action="store_true", help="the same as --log-level warning")
    serve.add_argument(
        "--processes",
        action="store_true",
        help="run each broker and the controller in its own process (more cores)",
    )
    serve.add_argument(
        "--metrics-port",
        type=int,
        metavar="N",
        help="serve Prometheus metrics at http://127.0.0.1:N/metrics (0: ephemeral)",
    )
    serve.add_argument(
        "--control-port",
        type=int,
        metavar="N",
        help="serve the HTTP/JSON control API at http://127.0.0.1:N/v1 (0: ephemeral)",
    )
    _add_security_arguments(serve)
    return parser


# -- security (issue 21): the listeners' protocol, SASL users, the authorizer ----------------------


def _add_security_arguments(serve: argparse.ArgumentParser) -> None:
    group = serve.add_argument_group("security")
    group.add_argument(
        "--security-protocol",
        default="PLAINTEXT",
        choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
        help="the client listeners' protocol (default PLAINTEXT)",
    )
    group.add_argument(
        "--sasl-mechanism",
        action="append",
        metavar="NAME",
        help="PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (repeatable; default "
        "SCRAM-SHA-512)",
    )
    group.add_argument(
        "--user",
        action="append",
        default=[],
        metavar="NAME:PASSWORD",
        help="a SASL user (repeatable; split at the first colon)",
    )
    group.add_argument(
        "--super-user", action="append", default=[], metavar="NAME", help="(repeatable)"
    )
    group.add_argument(
        "--authorizer", action="store_true", help="enforce ACLs (StandardAuthorizer's rules)"
    )
    group.add_argument(
        "--ssl-client-auth", default="none", choices=("none", "requested", "required")
    )


def _security_kwargs(args: argparse.Namespace) -> dict:
    """The cluster's security keyword arguments; ValueError names a bad one."""
    users = {}
    for entry in args.user:
        name, colon, password = entry.partition(":")
        if not colon or not name:
            raise ValueError(f"--user takes NAME:PASSWORD, got {entry.split(':')[0]!r}")
        users[name] = password
    kwargs = dict(
        security_protocol=args.security_protocol,
        sasl_mechanisms=args.sasl_mechanism,
        users=users,
        super_users=tuple(args.super_user),
        authorizer=args.authorizer,
        ssl_client_auth=args.ssl_client_auth,
    )
    SecurityConfig.from_arguments(**kwargs)
    return kwargs


def _print_security(cluster: Cluster, args: argparse.Namespace) -> None:
    """The CA and a client configuration (its password left out: it never leaves the process)."""
    if cluster.security is None:
        return
    if cluster.ssl_ca_location is not None:
        print(f"ssl.ca.location: {cluster.ssl_ca_location}", flush=True)
    user = args.user[0].partition(":")[0] if args.user else "client"
    if (
        cluster.security.config.sasl
        and not args.user
        and "OAUTHBEARER" not in (cluster.security.config.mechanisms)
    ):
        return
    config = dict(cluster.client_config(user))
    if "sasl.password" in config:
        config["sasl.password"] = f"<the password of {user}>"
    print(f"client config: {json.dumps(config)}", flush=True)


def _version() -> str:
    try:
        return version("kipwire")
    except PackageNotFoundError:
        return "unknown"


def _listeners(cluster: Cluster) -> None:
    protocol = cluster.security.config.protocol if cluster.security else "PLAINTEXT"
    for broker_id, node in sorted(cluster.nodes.items()):
        print(f"broker {broker_id}: {protocol}://{node.address}", flush=True)
    print(f"controller: {cluster.controller_node.address}", flush=True)


async def _serve(args: argparse.Namespace, config: dict[str, str]) -> None:
    # SIGINT and SIGTERM end the cluster the same orderly way (the recording is completed)
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        opener = open_process_cluster if args.processes else open_cluster
        async with opener(
            brokers=args.brokers,
            port=args.port,
            record=args.record,
            record_clients_only=args.record_clients_only,
            record_max_bytes=args.record_max_bytes,
            semantics=presets()[args.semantics],
            config=config,
            features=None if args.elr is None else {ELR_FEATURE: 1 if args.elr == "on" else 0},
            **_security_kwargs(args),
        ) as cluster:
            # the bootstrap servers first and the metrics URL next, as before there was more
            print(cluster.bootstrap_servers, flush=True)
            _print_security(cluster, args)
            async with trio.open_nursery() as nursery:
                if args.metrics_port is not None:
                    port = await nursery.start(serve_metrics, cluster, args.metrics_port)
                    print(f"metrics: http://127.0.0.1:{port}/metrics", flush=True)
                if args.control_port is not None:
                    port = await nursery.start(serve_control, cluster, args.control_port)
                    print(f"control: http://127.0.0.1:{port}/v1", flush=True)
                _listeners(cluster)
                if cluster.data_dir is not None:
                    entries = ",".join(str(e) for e in cluster.data_dir.entries)
                    print(f"data: {entries}", flush=True)
                async for _ in signals:
                    break
                nursery.cancel_scope.cancel()


def _config(args: argparse.Namespace) -> dict[str, str]:
    """The file's configs (unknown keys warned about and dropped), then --config's."""
    config: dict[str, str] = {}
    if args.config_file is not None:
        for key, value in read_properties(Path(args.config_file)).items():
            if key in IGNORED:
                log.debug("%s: %s is a Kafka config the mock has no use for", args.config_file, key)
            elif key not in KNOWN_NAMES:
                # as Kafka logs a config it does not know, and starts anyway
                log.warning("%s: %s", args.config_file, broker_config_problem(key, value))
            else:
                config[key] = value  # a bad value is refused below, with the others
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--config {item!r} is not KEY=VALUE")
        config[key.strip()] = value.strip()
    if args.data_dir is not None:
        data_dir = str(Path(args.data_dir).absolute())
        if config.get("log.dirs", data_dir) != data_dir:
            raise ConfigError(
                f"--data-dir {args.data_dir} and log.dirs={config['log.dirs']} differ"
            )
        config["log.dirs"] = data_dir
    cluster_config(config)
    return config


def _configure_logging(args: argparse.Namespace) -> None:
    level = logging.WARNING if args.quiet else getattr(logging, args.log_level.upper())
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
    show_internal = args.log_internal

    def wanted(record: logging.LogRecord) -> bool:
        # the nodes' own requests are logged at DEBUG; --log-internal shows them at any level
        if getattr(record, "internal", False):
            return show_internal or level <= logging.DEBUG
        return record.levelno >= level

    handler.addFilter(wanted)
    logger = logging.getLogger("kipwire.mockbroker")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if show_internal else level)
    logger.propagate = False


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and serve; 0 after SIGINT/SIGTERM, 2 on bad arguments or ports."""
    args = _parser().parse_args(argv)
    if args.brokers < 1:
        print("kipwire-broker: --brokers must be at least 1", file=sys.stderr)
        return 2
    if not 0 <= args.port <= 65535 - args.brokers:
        print(f"kipwire-broker: --port {args.port} is not a usable port", file=sys.stderr)
        return 2
    for flag, port in (
        ("--metrics-port", args.metrics_port),
        ("--control-port", args.control_port),
    ):
        if port is not None and not 0 <= port <= 65535:
            print(f"kipwire-broker: {flag} {port} is not a port", file=sys.stderr)
            return 2
    if args.record_max_bytes is not None and (args.record is None or args.record_max_bytes < 1):
        print("kipwire-broker: --record-max-bytes needs --record and N >= 1", file=sys.stderr)
        return 2
    try:
        _security_kwargs(args)
    except ValueError as exc:
        print(f"kipwire-broker: {exc}", file=sys.stderr)
        return 2
    _configure_logging(args)
    try:
        config = _config(args)
    except (ConfigError, PropertiesError, OSError) as exc:
        print(f"kipwire-broker: {exc}", file=sys.stderr)
        return 2
    try:
        trio.run(_serve, args, config)
    except (OSError, ClusterError, BaseExceptionGroup) as exc:
        cause = _start_up_error(exc)
        if cause is None:
            raise
        print(f"kipwire-broker: {cause}", file=sys.stderr)
        return 2
    return 0


def _start_up_error(exc: BaseException) -> BaseException | None:
    """The port or cluster error inside `exc` (trio wraps task errors in groups), or None."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _start_up_error(inner)
            if found is not None:
                return found
        return None
    return exc if isinstance(exc, OSError | ClusterError) else None
