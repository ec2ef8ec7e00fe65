"""Mneia: project memory for teams of people and AI agents."""

from importlib import metadata

__version__ = "0.1.0"


def version() -> str:
    """The installed distribution's version (``mneia --version``); the source's when not installed."""
    try:
        return metadata.version("mneia")
    except metadata.PackageNotFoundError:
        return __version__
