"""Crow's version, in a module of its own: capabilities read it without importing the package's public names."""

__version__ = "0.1.0"
