"""Client and AsyncClient are one set of methods: the same names, signatures and docstrings, the
async ones awaited (async generators for the event feeds)."""

from __future__ import annotations

import inspect

from jobledger.client import AsyncClient, Client

#: What differs by nature: closing, and the context manager of each kind.
OWN = {"close", "aclose"}


def _public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_") and callable(getattr(cls, name))} - OWN


def test_both_clients_have_the_same_methods() -> None:
    assert _public(Client) == _public(AsyncClient)
    assert "submit" in _public(Client) and "follow" in _public(Client)


def test_each_method_has_one_signature_and_one_docstring() -> None:
    for name in sorted(_public(Client)):
        sync, awaited = getattr(Client, name), getattr(AsyncClient, name)
        signed, signed_async = inspect.signature(sync), inspect.signature(awaited)
        assert signed.parameters == signed_async.parameters, name
        if not inspect.isgeneratorfunction(sync):  # an event feed returns an iterator of its kind
            assert signed.return_annotation == signed_async.return_annotation, name
        assert sync.__doc__ == awaited.__doc__, name


def test_the_async_methods_are_awaited_and_the_sync_ones_are_not() -> None:
    for name in sorted(_public(Client)):
        sync, awaited = getattr(Client, name), getattr(AsyncClient, name)
        assert not inspect.iscoroutinefunction(sync), name
        if inspect.isgeneratorfunction(sync):  # an event feed
            assert inspect.isasyncgenfunction(awaited), name
        else:
            assert inspect.iscoroutinefunction(awaited), name
        assert sync.__qualname__ == f"Client.{name}" and awaited.__qualname__ == f"AsyncClient.{name}"
