"""Who is calling, beyond API keys, and what they did.

    tokens.py              bearer tokens (JWTs) from an OAuth issuer: discovery, keys, validation
    protected_resource.py  the gateway as an RFC 9728 protected resource: metadata, challenges
    metadata_routes.py     GET /.well-known/oauth-protected-resource[/<path>] (Starlette)
    audit.py               one JSON record per call, to the log (`toolmesh.audit`) and a file

`gateway/core/auth.py` turns a token into a Principal with these; nothing here imports the core.
"""
