"""Helpers the tests share: servers started on free ports, live HTTP servers, ledger shortcuts."""
