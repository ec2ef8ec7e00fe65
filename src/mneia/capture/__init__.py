"""Capture: getting memory into Mneia from where people already work, without discipline.

Client-side commands that talk to a server through ``MNEIA_URL``: hooks that
resume and checkpoint on their own (``hook``, ``spool``, ``install``),
importers of real sessions and decision logs (``transcript``, ``adr``,
``rules``), all of whose text passes ``mneia.secrets`` before it leaves.
Nothing here imports the server: the hook path must start in milliseconds.
"""
