"""The Starlette application and its HTTP handlers, the Python client, the command line."""

__version__ = "0.1.0"
