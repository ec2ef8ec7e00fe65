"""Developer tools run from a checkout (``python -m scripts.catalog``); not part of the installed package."""
