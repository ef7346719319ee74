"""A real S3 endpoint for the tests: a one-node Ceph cluster and its radosgw, in a temporary directory.

Debian's ``ceph-mon``, ``ceph-osd`` and ``radosgw`` packages: one monitor, one OSD keeping its objects
in memory (``memstore``: nothing on disk but logs), no authentication between them (``auth_* =
none``, and ``crc`` messenger modes, without which the gateway hangs negotiating a secure mode), and
radosgw serving plain HTTP on a free port.  A user with fixed keys and one bucket are made with
``radosgw-admin`` and a SigV2-signed ``PUT /<bucket>`` (obstore makes no buckets).  Each process is
started in the foreground by this module and stopped by its PID.  A whole cluster starts in about
ten seconds.

Run as a module it starts one and prints its settings, for trying the store by hand:
``python -m tests.blobs.radosgw``.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import hmac
import shutil
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree

from tests.support.private_redis import free_port

BINARIES = ("ceph-mon", "ceph-osd", "radosgw", "radosgw-admin", "monmaptool", "ceph")
START_DEADLINE = 60.0  # seconds the whole cluster may take to answer
ACCESS_KEY = "JOBLEDGERTESTKEY0000"
SECRET_KEY = "jobledger-test-secret-0000000000000000000"
BUCKET = "jobledger-test"


def missing_binaries() -> list[str]:
    return [name for name in BINARIES if shutil.which(name) is None]


class RadosGW:
    """A one-node Ceph cluster with a radosgw on ``self.endpoint``; :meth:`start`, then :meth:`stop`."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.mon_port = free_port()
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.bucket = BUCKET
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.conf = workdir / "ceph.conf"

    def options(self) -> dict[str, str]:
        """The ``[blobs] options`` that reach this gateway."""
        return {
            "endpoint": self.endpoint,
            "region": "us-east-1",
            "access_key_id": ACCESS_KEY,
            "secret_access_key": SECRET_KEY,
            "allow_http": "true",
            "virtual_hosted_style_request": "false",
        }

    def _write_conf(self, fsid: str) -> None:
        d = self.workdir
        self.conf.write_text(
            f"""[global]
fsid = {fsid}
mon host = v2:127.0.0.1:{self.mon_port}
mon initial members = a
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
ms cluster mode = crc
ms service mode = crc
ms client mode = crc
ms mon cluster mode = crc
ms mon service mode = crc
ms mon client mode = crc
ms bind msgr1 = false
run dir = {d}/run
log file = {d}/log/$name.log
admin socket = {d}/run/$name.asok
pid file = {d}/run/$name.pid
mon data = {d}/mon/$name
osd data = {d}/osd/$name
keyring = /dev/null
osd objectstore = memstore
memstore device bytes = 4294967296
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
paxos propose interval = 0.05
mon osd auto mark in = true
osd max object name len = 460
osd max object namespace len = 64
rgw enable lc threads = false
rgw enable gc threads = false
rgw dns name = 127.0.0.1
rgw frontends = beast endpoint=127.0.0.1:{self.port}
rgw data = {d}/rgw
""",
        )

    def _run(self, *args: str, timeout: float = 30.0) -> str:
        done = subprocess.run(
            [*args, "-c", str(self.conf)], capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        return done.stdout

    def _spawn(self, *args: str) -> None:
        log = open(self.workdir / "log" / f"{Path(args[0]).name}.out", "ab")  # noqa: SIM115 - the child owns it
        proc = subprocess.Popen([*args, "-f", "-c", str(self.conf)], stdout=log, stderr=subprocess.STDOUT)
        self.procs.append((args[0], proc))
        log.close()

    def start(self) -> None:
        deadline = time.monotonic() + START_DEADLINE
        for sub in ("run", "log", "mon/mon.a", "osd/osd.0", "rgw"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        fsid = str(uuid.uuid4())
        self._write_conf(fsid)
        monmap = str(self.workdir / "monmap")
        subprocess.run(
            ["monmaptool", "--create", "--addv", "a", f"[v2:127.0.0.1:{self.mon_port}]",
             "--fsid", fsid, monmap],
            capture_output=True, check=True, timeout=30,
        )  # fmt: skip
        self._run("ceph-mon", "--mkfs", "-i", "a", "--monmap", monmap)
        self._spawn("ceph-mon", "-i", "a")
        osd_id = self._run("ceph", "osd", "create", timeout=START_DEADLINE).strip()
        self._run("ceph-osd", "-i", osd_id, "--mkfs")
        self._spawn("ceph-osd", "-i", osd_id)
        self._spawn("radosgw", "-n", "client.rgw")
        self._wait(self._gateway_answers, "radosgw to answer", deadline)
        self._run(
            "radosgw-admin", "user", "create", "--uid", "jobledger", "--display-name", "jobledger tests",
            "--access-key", ACCESS_KEY, "--secret", SECRET_KEY,
        )  # fmt: skip
        self._s3("PUT", f"/{self.bucket}")

    def _gateway_answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.endpoint, timeout=1):
                return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False

    def _wait(self, check: Callable[[], bool], what: str, deadline: float) -> None:
        while not check():
            for name, proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited ({proc.returncode}); logs in {self.workdir}/log")
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}; logs in {self.workdir}/log")
            time.sleep(0.1)

    def pending_uploads(self, prefix: str = "") -> list[str]:
        """The keys of the bucket's multipart uploads begun and neither completed nor aborted."""
        listing = ElementTree.fromstring(self._s3("GET", f"/{self.bucket}?uploads"))
        keys = [el.text or "" for el in listing.iter() if el.tag.rsplit("}", 1)[-1] == "Key"]
        return [key for key in keys if key.startswith(prefix)]

    def _s3(self, method: str, path: str) -> bytes:
        """A SigV2-signed request without a body (enough to make a bucket and list its uploads)."""
        date = email.utils.formatdate(usegmt=True)
        to_sign = f"{method}\n\n\n{date}\n{path}"
        signature = base64.b64encode(hmac.new(SECRET_KEY.encode(), to_sign.encode(), hashlib.sha1).digest())
        request = urllib.request.Request(
            self.endpoint + path,
            method=method,
            headers={"Date": date, "Authorization": f"AWS {ACCESS_KEY}:{signature.decode()}"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return bytes(response.read())

    def stop(self) -> None:
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for _, proc in reversed(self.procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.procs = []


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="radosgw-") as tmp:
        gateway = RadosGW(Path(tmp))
        started = time.monotonic()
        try:
            gateway.start()
            print(f"radosgw up in {time.monotonic() - started:.1f}s at {gateway.endpoint}")
            print(f"bucket {gateway.bucket}, [blobs] options {gateway.options()}")
            input("enter to stop ")
        finally:
            gateway.stop()
