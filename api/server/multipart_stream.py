"""A ``multipart/form-data`` body read as it streams in, a part at a time, never held whole.

python-multipart's :class:`MultipartParser` is fed the request's chunks as they arrive and calls
back with headers and slices of data; :class:`MultipartStream` turns those calls into
:class:`Part` objects whose bytes are an async iterator (:meth:`Part.chunks`), read before the
next part is asked for.  So a file part can go straight into the blob store, and at most one
chunk of the body is in memory at a time.

A body that is not well-formed multipart, that ends before its closing boundary (a cut-off
upload), has more than ``max_parts`` parts, or a part with a header block that is too large, is a
:class:`~jobledger.ledger.errors.BadRequest` saying so.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from jobledger.ledger.errors import BadRequest


class CutOff(BadRequest):
    """The body ended before the multipart's closing boundary."""


def boundary_of(content_type: str) -> bytes | None:
    """The boundary of a ``multipart/form-data`` content type, or None when it is not one."""
    kind, params = parse_options_header(content_type)
    if kind != b"multipart/form-data":
        return None
    boundary = params.get(b"boundary")
    if not boundary or len(boundary) > 200:
        raise BadRequest("a multipart/form-data body needs a boundary of 1 to 200 characters")
    return boundary


@dataclass
class Part:
    """One part: its form-field ``name``, its ``filename`` (None when it sent none) and its
    ``content_type`` (None when it sent none); its bytes through :meth:`chunks`, once."""

    name: str
    filename: str | None
    content_type: str | None
    _stream: MultipartStream = field(repr=False)

    async def chunks(self) -> AsyncIterator[bytes]:
        while (data := await self._stream._part_data()) is not None:
            yield data

    async def read(self, limit: int) -> bytes:
        """The whole part (a small one: a form field, a job body); BadRequest past ``limit`` bytes."""
        out = bytearray()
        async for data in self.chunks():
            out += data
            if len(out) > limit:
                raise BadRequest(f"form field {self.name!r} is over its limit of {limit} bytes")
        return bytes(out)


class MultipartStream:
    """The parts of a multipart body, as they stream in (see the module)."""

    def __init__(self, body: AsyncIterator[bytes], boundary: bytes, max_parts: int) -> None:
        self._body = body
        self._max_parts = max_parts
        self._events: deque[tuple[str, object]] = deque()
        self._ended = False  # the closing boundary was read
        self._drained = False  # the body has no more chunks
        self._parts = 0
        self._in_part = False
        self._field = bytearray()
        self._value = bytearray()
        self._headers: dict[str, str] = {}
        self._parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self._on_part_begin,
                "on_part_data": self._on_part_data,
                "on_part_end": lambda: self._events.append(("end", None)),
                "on_header_field": lambda d, s, e: self._field.extend(d[s:e]),
                "on_header_value": lambda d, s, e: self._value.extend(d[s:e]),
                "on_header_end": self._on_header_end,
                "on_headers_finished": lambda: self._events.append(("headers", dict(self._headers))),
                "on_end": self._on_end,
            },
        )

    def _on_part_begin(self) -> None:
        self._headers = {}

    def _on_part_data(self, data: bytes, start: int, end: int) -> None:
        if end > start:
            self._events.append(("data", bytes(data[start:end])))

    def _on_header_end(self) -> None:
        name = self._field.decode("latin-1").strip().lower()
        self._headers[name] = self._value.decode("latin-1").strip()  # the bytes as they came
        self._field.clear()
        self._value.clear()

    def _on_end(self) -> None:
        self._ended = True

    async def _event(self) -> tuple[str, object] | None:
        """The parser's next event, reading the body as far as it takes; None at the end."""
        while not self._events:
            if self._ended or self._drained:
                if not self._ended:
                    raise CutOff("the multipart body ends before its closing boundary: cut off?")
                return None
            try:
                chunk = await anext(self._body)
            except StopAsyncIteration:
                self._drained = True
                continue
            try:
                self._parser.write(chunk)
            except MultipartParseError as exc:
                raise BadRequest(f"the body is not well-formed multipart/form-data: {exc}") from None
        return self._events.popleft()

    async def _part_data(self) -> bytes | None:
        event = await self._event()
        if event is None:
            raise CutOff("the multipart body ends in the middle of a part: cut off?")
        kind, value = event
        if kind == "end":
            self._in_part = False
            return None
        assert kind == "data" and isinstance(value, bytes)
        return value

    async def parts(self) -> AsyncIterator[Part]:
        """Each part in turn; the previous part's bytes not yet read are skipped."""
        while True:
            if self._in_part:
                while await self._part_data() is not None:
                    pass
            event = await self._event()
            if event is None:
                return
            kind, headers = event
            assert kind == "headers" and isinstance(headers, dict)
            self._parts += 1
            if self._parts > self._max_parts:
                raise BadRequest(f"the body has more than {self._max_parts} parts")
            self._in_part = True
            yield self._part(headers)

    def _part(self, headers: dict[str, str]) -> Part:
        disposition, params = parse_options_header(headers.get("content-disposition", ""))
        if disposition != b"form-data" or b"name" not in params:
            raise BadRequest("each part needs Content-Disposition: form-data with a name")
        filename = params.get(b"filename")
        return Part(
            name=_text(params[b"name"], "name"),
            filename=None if filename is None else _text(filename, "filename"),
            content_type=headers.get("content-type") or None,
            _stream=self,
        )


def _text(raw: bytes, what: str) -> str:
    """A part's name or filename, sent as UTF-8 (as browsers and curl send them)."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise BadRequest(f"a part's {what} is not UTF-8") from None
