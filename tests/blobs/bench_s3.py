"""The object store's rates on a real S3: a file (1 GiB by default) put and read back through
:class:`jobledger.blobs.objects.ObjectBlobStore` on a radosgw started for the run
(:mod:`tests.blobs.radosgw`, objects in memory), with this process's memory growth each way.

``python -m tests.blobs.bench_s3 [MiB]``
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from jobledger.blobs.objects import ObjectBlobStore
from tests.benchmarks.ours.ours_files import through_store, write_file
from tests.blobs.radosgw import RadosGW


def main(mib: int) -> None:
    size = mib << 20
    with tempfile.TemporaryDirectory(prefix="jobledger-bench-s3-") as tmp:
        path = Path(tmp) / "file.bin"
        sha256 = write_file(path, size)
        gateway = RadosGW(Path(tmp) / "radosgw")
        try:
            gateway.start()
            store = ObjectBlobStore(f"s3://{gateway.bucket}/bench", gateway.options())
            put, read = through_store(store, path, sha256)
        finally:
            gateway.stop()
    for way, moved in (("put", put), ("read", read)):
        print(
            f"{way} {mib:,} MiB: {size / moved.seconds / 1e6:,.0f} MB/s, RSS +{moved.rss_growth_mib:.1f} MiB"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1024)
