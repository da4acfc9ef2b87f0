"""`IndexedHeaders` answers every lookup as Starlette's `Headers` does."""

from __future__ import annotations

from starlette.datastructures import Headers

from toolmesh.gateway.http.lean.headers import IndexedHeaders

RAW = [
    (b"host", b"127.0.0.1:8000"),
    (b"x-request-id", b"first"),
    (b"content-type", b"application/json"),
    (b"x-request-id", b"second"),  # a repeated header: the first wins in both
    (b"x-latin", "caf\u00e9".encode("latin-1")),
]


def test_indexed_headers_answer_as_starlettes() -> None:
    scope = {"type": "http", "headers": RAW}
    plain, indexed = Headers(scope=scope), IndexedHeaders(scope)
    for name in ("host", "X-Request-Id", "CONTENT-TYPE", "x-latin", "origin", "authorization"):
        assert indexed.get(name) == plain.get(name), name
        assert indexed.get(name, "none") == plain.get(name, "none"), name
        assert (name in indexed) == (name in plain), name
        if name in plain:
            assert indexed[name] == plain[name]
    assert 42 not in indexed
    assert indexed == plain and indexed.raw == plain.raw
    assert indexed.getlist("x-request-id") == ["first", "second"]
