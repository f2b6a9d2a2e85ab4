"""The client package's version (the client wheel reads it too)."""

__version__ = "0.1.0"
