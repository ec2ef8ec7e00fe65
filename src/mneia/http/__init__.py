"""The HTTP boundary around GraphQL: what clients send, what they get back, and the probes.

Everything here speaks HTTP (bodies, media types, status codes, headers);
nothing here knows Mneia's schema or storage beyond the two probes.
"""
