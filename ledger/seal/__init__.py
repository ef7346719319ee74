"""The verifiable ledger's core: an event's leaf bytes, the RFC 9162 Merkle tree over them, tiles,
signed checkpoints and a job's receipt.

Pure functions and small classes, no Redis: the sealer, the server, the command line and an offline
auditor call them.  The verifying side (:mod:`.leaves`' decoding, :mod:`.verify`, :mod:`.keys`,
:mod:`.notes`, :mod:`.checkpoints`, :mod:`.proof_json`, :mod:`.receipts`) needs only ``hashlib``,
``cryptography`` and ``rfc8785``; nothing here imports a jobledger module outside this package but
the root of the exception tree.  The formats are in docs/verifiable-ledger.md.
"""
