"""Mneia: project memory for teams of people and AI agents."""

__version__ = "0.1.0"


def version() -> str:
    """The installed distribution's version (``mneia --version``); the source's when not installed.

    ``importlib.metadata`` is imported here, not above: ``mneia hook`` imports this package and must
    start on a handful of modules (tests/test_capture_hook.py counts them)."""
    from importlib import metadata

    try:
        return metadata.version("mneia")
    except metadata.PackageNotFoundError:
        return __version__
