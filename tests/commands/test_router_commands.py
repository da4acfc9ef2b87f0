"""`toolmesh router build` and `toolmesh router eval`, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolmesh.cli import main

DATA = Path(__file__).parents[1] / "router" / "data"
POOL, QUERIES = str(DATA / "small_pool.json"), str(DATA / "small_queries.jsonl")


def test_build_finds_the_cached_model(router_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["router", "build", "--cache-dir", str(router_cache)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert Path(printed["directory"]).parent == router_cache / "models"


def test_eval_reports_recall_mrr_latency_and_build_time(
    router_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["router", "eval", "--catalog", POOL, "--queries", QUERIES, "--cache-dir", str(router_cache)]
    assert main([*args, "--match", "name", "--k", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["functions"] == 8 and report["queries"] == 9 and report["k"] == 3
    assert report["recall_at_1"] >= 0.75 and report["recall_at_k"] == 1.0
    assert 0 < report["mrr"] <= 1 and report["latency_p95_ms"] >= report["latency_p50_ms"] > 0
    assert report["index_build_s"] > 0 and report["threshold"] == 0.3
    assert 0 < report["threshold_keeps"] <= 1 and 0 <= report["threshold_rejects"] <= 1
    # The same weather prompt expects each get_weather entry once: by id, one of them must miss.
    assert main([*args, "--match", "id", "--k", "1", "--json"]) == 0
    by_id = json.loads(capsys.readouterr().out)
    assert by_id["recall_at_1"] < report["recall_at_1"]


def test_eval_prints_a_table(router_cache: Path) -> None:
    command = [sys.executable, "-m", "toolmesh", "router", "eval", "--catalog", POOL, "--queries", QUERIES]
    done = subprocess.run(
        [*command, "--cache-dir", str(router_cache)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = dict(
        line.split(None, 1) for line in done.stdout.splitlines() if line and not line.startswith(" ")
    )
    assert {"R@1", "R@5", "MRR", "functions"} <= set(lines)


def test_eval_names_a_bad_input_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "queries.jsonl"
    broken.write_text('{"prompt": "hi", "expected_pool_id": "p0"}\nnot json\n')
    assert main(["router", "eval", "--catalog", POOL, "--queries", str(broken)]) == 2
    assert f"{broken}:2" in capsys.readouterr().err
    assert main(["router", "eval", "--catalog", str(tmp_path / "none.json"), "--queries", QUERIES]) == 2
    assert "none.json" in capsys.readouterr().err
