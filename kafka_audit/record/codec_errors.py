"""The one error of every codec (:class:`DecompressionError`) and its two sentences: a payload that
does not decompress (:func:`failed`) and one that would pass the size cap (:func:`too_large`,
a :class:`TooLarge`); :func:`inflate_piece` gives both for one call of a streaming inflater.
"""

from __future__ import annotations

from collections.abc import Callable

from kafka_audit.errors import KafkaAuditError
from kafka_audit.record.record_batch import codec_label


class DecompressionError(KafkaAuditError):
    """A payload that does not decompress, an unknown codec id, or a decompression bomb."""


class TooLarge(DecompressionError):
    """The output passes the size given: a bomb against the batch's cap, or, against the one-call
    bound (:data:`kafka_audit.record.byte_stream.STREAM_BOUND`), a payload to inflate as a stream."""


def too_large(codec: int, max_size: int) -> DecompressionError:
    return TooLarge(
        f"{codec_label(codec)} payload inflates past {max_size} bytes, the most this batch may hold "
        f"(decompression bomb or corrupt length)"
    )


def failed(codec: int, exc: Exception | str) -> DecompressionError:
    return DecompressionError(f"Failed to decompress the {codec_label(codec)} payload: {exc}")


def inflate_piece(
    codec: int, inflate: Callable[[], bytes], errors: type[Exception], produced: int, max_size: int
) -> bytes:
    """One call of a stream's inflater: its library's ``errors`` a :func:`failed`, its output with
    the ``produced`` before it bound to ``max_size`` (:func:`too_large`)."""
    try:
        out = inflate()
    except errors as exc:
        raise failed(codec, exc) from None
    if produced + len(out) > max_size:
        raise too_large(codec, max_size)
    return out
