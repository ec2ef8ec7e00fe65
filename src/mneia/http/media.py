"""Which JSON media type a client accepts: the GraphQL-over-HTTP one, or plain JSON.

``application/graphql-response+json`` is served when the client's Accept
header lists it at least as high as ``application/json``; everything else
(no Accept, ``*/*``, ``application/json``) gets ``application/json``, with the
status codes legacy clients expect.
"""

from __future__ import annotations

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"


def _weights(accept: str) -> dict[str, float]:
    weights: dict[str, float] = {}
    for part in accept.split(","):
        media, *params = (piece.strip() for piece in part.split(";"))
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        media = media.lower()
        weights[media] = max(weights.get(media, 0.0), quality)
    return weights


def negotiated(accept: str | None) -> str:
    weights = _weights(accept or "")
    preferred = weights.get(GRAPHQL_RESPONSE, 0.0)
    return GRAPHQL_RESPONSE if preferred > 0 and preferred >= weights.get(JSON, 0.0) else JSON


def content_type(media_type: str) -> str:
    return f"{media_type}; charset=utf-8"
