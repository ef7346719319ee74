"""What the verifiable ledger's core raises: one branch of the product's exception tree.

Every failure says what was wrong and where: a malformed input (:class:`Malformed`), a proof that
does not prove (:class:`ProofFailed`), a note without a good signature by a known key
(:class:`SignatureFailed`), a checkpoint of another log (:class:`OtherLog`), or a receipt that does
not hold (:class:`ReceiptFailed`, which names the event and the kind of failure).
"""

from __future__ import annotations

from jobledger.ledger.errors import JobLedgerError


class SealError(JobLedgerError):
    """Root of the verifiable ledger's errors: the input does not verify, nothing was changed."""

    code = "UNVERIFIED"
    status = 422


class Malformed(SealError):
    """A leaf, key, note, checkpoint, tile, proof or receipt that does not parse as its format."""

    code = "MALFORMED"
    status = 400


class ProofFailed(SealError):
    """An inclusion or consistency proof that does not lead to the root it must."""

    code = "PROOF_FAILED"


class SignatureFailed(SealError):
    """A note with a bad signature by a known key, or with none by any known key."""

    code = "SIGNATURE_FAILED"


class OtherLog(SealError):
    """A checkpoint of another log (another origin) than the one it is checked against."""

    code = "OTHER_LOG"


class TileMissing(SealError, LookupError):
    """A tile the tree needs is not where the tiles are kept (nor its full tile, for a partial one)."""

    code = "TILE_MISSING"
    status = 503


class ReceiptFailed(SealError):
    """A receipt that does not hold: ``kind`` says how (one of :data:`RECEIPT_FAILURES`), ``event``
    which of its events (its id, else its position) when one is to blame."""

    code = "RECEIPT_FAILED"

    def __init__(self, kind: str, message: str, event: str | None = None) -> None:
        assert kind in RECEIPT_FAILURES, kind
        super().__init__(message)
        self.kind = kind
        self.event = event


#: How a receipt can fail: its JSON does not parse; the key given is not the one it names; the
#: checkpoint's signature is bad or missing; the checkpoint is of another log; an event's leaf bytes do
#: not decode; an event's proof does not lead to the checkpoint's root (or is for another size); an
#: event of another job; events out of stream order.
RECEIPT_FAILURES = ("malformed", "key", "signature", "origin", "leaf", "proof", "job", "order")
