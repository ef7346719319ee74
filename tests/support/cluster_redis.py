"""A Valkey Cluster of a test's own: three ``valkey-server --cluster-enabled yes`` on loopback, each
with its append-only file, the 16,384 slots split between them with ``CLUSTER ADDSLOTSRANGE`` and
joined by ``CLUSTER MEET``; a node can be killed and started again on its port and its files."""

from __future__ import annotations

import socket
from pathlib import Path

import redis

from tests.support.private_redis import PrivateServer, free_port, wait_until

SLOTS = 16_384
BUS_OFFSET = 10_000  # a node's cluster bus listens on its port + 10,000


def cluster_port() -> int:
    """A free port whose bus port is free too (and so no higher than 55,535)."""
    while True:
        port = free_port()
        if port + BUS_OFFSET > 65_535:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + BUS_OFFSET))
            except OSError:
                continue
        return port


class ClusterNode(PrivateServer):
    """One node: cluster mode on, every write in its append-only file before it answers."""

    SETTINGS: tuple[str, ...] = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "2000", "--appendonly", "yes", "--appendfsync", "always",
                "--save", "")  # fmt: skip

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir, port=cluster_port())

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_timeout=5)


class LocalCluster:
    """Three master nodes, no replicas; ``url`` names the first (any node will do for jobledger)."""

    def __init__(self, workdir: Path, size: int = 3) -> None:
        self.nodes = [ClusterNode(workdir / f"node{i}") for i in range(size)]
        self.url = self.nodes[0].url

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        share = SLOTS // len(self.nodes)
        for i, node in enumerate(self.nodes):
            first = i * share
            last = SLOTS - 1 if i == len(self.nodes) - 1 else first + share - 1
            client = node.client()
            client.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
            for other in self.nodes:
                if other is not node:
                    client.execute_command("CLUSTER", "MEET", "127.0.0.1", other.port)
            client.close()
        wait_until(self.ready, "the cluster to be ready")

    def ready(self) -> bool:
        for node in self.nodes:
            client = node.client()
            try:
                info = client.execute_command("CLUSTER", "INFO")
                text = info.decode() if isinstance(info, bytes) else str(info)
                if "cluster_state:ok" not in text or f"cluster_known_nodes:{len(self.nodes)}" not in text:
                    return False
            except redis.RedisError:
                return False
            finally:
                client.close()
        return True

    def node_of(self, key: str) -> ClusterNode:
        """The node that serves ``key``'s slot."""
        client = self.nodes[0].client()
        try:
            slot = int(client.execute_command("CLUSTER", "KEYSLOT", key))
        finally:
            client.close()
        share = SLOTS // len(self.nodes)
        return self.nodes[min(slot // share, len(self.nodes) - 1)]

    def kill(self) -> None:
        for node in self.nodes:
            if node.proc is not None:
                node.proc.kill()
                node.proc.wait(timeout=10)
                node.proc = None
