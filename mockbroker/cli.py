"""`kipwire-broker serve`: run a mock cluster until interrupted, one log line per request."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys

import trio

from .cluster import Cluster, ClusterError, open_cluster
from .metrics import serve_metrics
from .security.config import SecurityConfig


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kipwire-broker", description="A mock Kafka (KRaft) cluster on 127.0.0.1."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run a cluster until interrupted")
    serve.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    serve.add_argument(
        "--port",
        type=int,
        default=0,
        help="port of broker 1, the others follow (default: ephemeral ports)",
    )
    serve.add_argument("--record", metavar="FILE", help="write every connection to a pcapng")
    serve.add_argument("--quiet", action="store_true", help="do not log each request")
    serve.add_argument(
        "--metrics-port",
        type=int,
        metavar="N",
        help="serve Prometheus metrics at http://127.0.0.1:N/metrics (0: ephemeral)",
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


async def _serve(args: argparse.Namespace) -> None:
    # SIGINT and SIGTERM end the cluster the same orderly way (the recording is completed)
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with open_cluster(
            brokers=args.brokers, port=args.port, record=args.record, **_security_kwargs(args)
        ) as cluster:
            print(cluster.bootstrap_servers, flush=True)
            _print_security(cluster, args)
            async with trio.open_nursery() as nursery:
                if args.metrics_port is not None:
                    port = await nursery.start(serve_metrics, cluster, args.metrics_port)
                    print(f"metrics: http://127.0.0.1:{port}/metrics", flush=True)
                async for _ in signals:
                    break
                nursery.cancel_scope.cancel()


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and serve; 0 after SIGINT/SIGTERM, 2 on bad arguments or ports."""
    args = _parser().parse_args(argv)
    if args.brokers < 1:
        print("kipwire-broker: --brokers must be at least 1", file=sys.stderr)
        return 2
    if not 0 <= args.port <= 65535 - args.brokers:
        print(f"kipwire-broker: --port {args.port} is not a usable port", file=sys.stderr)
        return 2
    if args.metrics_port is not None and not 0 <= args.metrics_port <= 65535:
        print(f"kipwire-broker: --metrics-port {args.metrics_port} is not a port", file=sys.stderr)
        return 2
    try:
        _security_kwargs(args)
    except ValueError as exc:
        print(f"kipwire-broker: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        logging.basicConfig(format="%(asctime)s %(name)s %(message)s", level=logging.WARNING)
        logging.getLogger("kipwire.mockbroker").setLevel(logging.DEBUG)
    try:
        trio.run(_serve, args)
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
