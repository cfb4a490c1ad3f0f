"""`kipwire-broker serve`: run a mock cluster until interrupted, one log line per request."""

from __future__ import annotations

import argparse
import logging
import signal
import sys

import trio

from .cluster import ClusterError, open_cluster
from .metrics import serve_metrics


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
    return parser


async def _serve(args: argparse.Namespace) -> None:
    # SIGINT and SIGTERM end the cluster the same orderly way (the recording is completed)
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with open_cluster(
            brokers=args.brokers, port=args.port, record=args.record
        ) as cluster:
            print(cluster.bootstrap_servers, flush=True)
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
