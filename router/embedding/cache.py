"""Function embeddings on disk, keyed by model and text hash, so a restart does not re-embed."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from toolmesh.router.embedding.embedder import Vectors


class EmbeddingCache:
    """A SQLite table of vectors. Safe to share between processes (SQLite locks it)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        with self._db:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS embeddings ("
                " model TEXT NOT NULL, text_hash TEXT NOT NULL, vector BLOB NOT NULL,"
                " PRIMARY KEY (model, text_hash))"
            )

    def get(self, model: str, hashes: Iterable[str]) -> dict[str, Vectors]:
        """The vectors already stored for these text hashes."""
        wanted = list(dict.fromkeys(hashes))
        found: dict[str, Vectors] = {}
        for start in range(0, len(wanted), 500):  # SQLite's bound-parameter limit
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT text_hash, vector FROM embeddings WHERE model = ? AND text_hash IN ({marks})",
                [model, *chunk],
            )
            for text_hash, blob in rows:
                found[text_hash] = np.frombuffer(blob, np.float32)
        return found

    def put(self, model: str, vectors: Mapping[str, Vectors]) -> None:
        rows = [(model, h, np.ascontiguousarray(v, np.float32).tobytes()) for h, v in vectors.items()]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)", rows)

    def __len__(self) -> int:
        (count,) = self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()
        return int(count)

    def close(self) -> None:
        self._db.close()
