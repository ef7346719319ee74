"""How a client method written once, as steps, becomes a method of the sync client and of the async one.

Every public method of both clients is written once (:mod:`jobledger.client.methods`) as a function
that gives the steps of what it does (:mod:`jobledger.client.steps`), marked :class:`twin` (the steps
return the method's result) or :class:`feed` (they hand on events, one at a time).  When a class
deriving from :class:`SyncFace` or :class:`AsyncFace` is made, each such method becomes a real
function of that class: a plain one that runs the steps at once (no event loop), or a coroutine
function (an async generator for a feed) that awaits them.  It keeps the written method's name,
signature and docstring, so ``help()`` and ``inspect`` see each client as if written by hand, and
calling it costs no more than a hand-written one.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterator
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

from jobledger.client.models import Event
from jobledger.client.steps import Steps

P = ParamSpec("P")
T = TypeVar("T")


class SyncFace:
    """A client that does each step at once: it has ``_complete(steps) -> result`` and
    ``_iterate(steps) -> Iterator[Event]``, and every :class:`twin` and :class:`feed` it inherits
    becomes a plain method."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _make_faces(cls, synchronous=True)


class AsyncFace:
    """A client that awaits each step: ``async _complete(steps) -> result`` and
    ``_iterate(steps) -> AsyncIterator[Event]``; every :class:`twin` becomes a coroutine function
    and every :class:`feed` an async generator."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _make_faces(cls, synchronous=False)


class twin(Generic[P, T]):
    """A method of both clients, written as the function giving its steps (``-> Steps[T]``): ``T``
    on the sync client, awaited on the async one."""

    def __init__(self, steps: Callable[Concatenate[Any, P], Steps[T]]) -> None:
        self.steps = steps
        self.result = _result_of(steps)

    @overload
    def __get__(self, face: None, owner: type) -> Self: ...
    @overload
    def __get__(self, face: SyncFace, owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(self, face: AsyncFace, owner: type) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, face: object, owner: type) -> Any:
        return _unfaced(self, face, owner)

    def face(self, synchronous: bool) -> Callable[..., Any]:
        steps = self.steps
        if synchronous:

            def method(self: Any, /, *args: Any, **kwargs: Any) -> Any:
                return self._complete(steps(self, *args, **kwargs))

            return _dressed(method, steps, self.result)

        async def amethod(self: Any, /, *args: Any, **kwargs: Any) -> Any:
            return await self._complete(steps(self, *args, **kwargs))

        return _dressed(amethod, steps, self.result)


class feed(Generic[P]):
    """A method of both clients handing on events, written as the function giving the steps that
    yield them: an iterator on the sync client, an async generator on the async one."""

    def __init__(self, steps: Callable[Concatenate[Any, P], Steps[Any]]) -> None:
        self.steps = steps

    @overload
    def __get__(self, face: None, owner: type) -> Self: ...
    @overload
    def __get__(self, face: SyncFace, owner: type) -> Callable[P, Iterator[Event]]: ...
    @overload
    def __get__(self, face: AsyncFace, owner: type) -> Callable[P, AsyncGenerator[Event, None]]: ...
    def __get__(self, face: object, owner: type) -> Any:
        return _unfaced(self, face, owner)

    def face(self, synchronous: bool) -> Callable[..., Any]:
        steps = self.steps
        if synchronous:

            def method(self: Any, /, *args: Any, **kwargs: Any) -> Iterator[Event]:
                yield from self._iterate(steps(self, *args, **kwargs))

            return _dressed(method, steps, "Iterator[Event]")

        async def amethod(self: Any, /, *args: Any, **kwargs: Any) -> AsyncGenerator[Event, None]:
            async for event in self._iterate(steps(self, *args, **kwargs)):
                yield event

        return _dressed(amethod, steps, "AsyncGenerator[Event, None]")


def _unfaced(written: twin[Any, Any] | feed[Any], face: object, owner: type) -> Any:
    """A twin or feed read from a class that is no face: itself from the class, else an error (a
    face has a function of its own in its place)."""
    if face is None:
        return written
    raise TypeError(f"{owner.__name__} runs no steps: a client derives from SyncFace or AsyncFace")


def _make_faces(cls: type, synchronous: bool) -> None:
    """Put on ``cls`` its own function for each twin and feed it inherits."""
    for name in dir(cls):
        written = inspect.getattr_static(cls, name)
        if isinstance(written, twin | feed):
            made = written.face(synchronous)
            made.__qualname__ = f"{cls.__qualname__}.{name}"
            made.__module__ = cls.__module__
            setattr(cls, name, made)


def _result_of(steps: Callable[..., Any]) -> str:
    """The result the steps return, as written in their annotation ``Steps[...]``."""
    written = str(steps.__annotations__.get("return", ""))
    if not (written.startswith("Steps[") and written.endswith("]")):
        raise TypeError(f"{steps.__qualname__} is annotated -> {written!r}, not -> Steps[result]")
    return written.removeprefix("Steps[").removesuffix("]")


def _dressed(method: Callable[..., Any], steps: Callable[..., Any], result: str) -> Callable[..., Any]:
    """``method`` named, documented and signed as ``steps``, returning ``result``."""
    method.__name__ = steps.__name__
    method.__doc__ = steps.__doc__
    signature = inspect.signature(steps)
    method.__signature__ = signature.replace(return_annotation=result)  # type: ignore[attr-defined]
    method.__annotations__ = {**steps.__annotations__, "return": result}
    return method
