"""One project, one data directory: `toolmesh up` processes of two projects on one machine, as a
user starts them (`--module`, from each project's directory), never claim, list or return each
other's jobs, even when both serve a function of the same name and share one jobs file."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT
from tests.gateway.test_up import start_up, stop, user_env

#: Each project's module: `slow_note` in both (different code), and one function of its own.
MODULE = '''
import time


def slow_note(text: str) -> str:
    """Write a note, slowly."""
    time.sleep(0.2)
    return "{project}:" + text


def only_{project}(text: str) -> str:
    """A function only project {project} has."""
    return "{project}-only:" + text
'''
JOBS_PER_PROJECT = 10


def _env(tmp_path: Path, router_cache: Path) -> dict[str, str]:
    """A user's shell, with this checkout's toolmesh first on the path (the venv's `toolmesh`
    might import another); the projects' modules are still found only in their directories."""
    return {**user_env(tmp_path, router_cache), "PYTHONPATH": str(ROOT)}


def _project(tmp_path: Path, name: str) -> Path:
    directory = tmp_path / name
    directory.mkdir()
    (directory / f"{name}_tools.py").write_text(MODULE.format(project=name))
    return directory


def _submit_all(url: str, project: str) -> list[str]:
    with httpx.Client(base_url=url, timeout=10) as http:
        ids = []
        for i in range(JOBS_PER_PROJECT):
            function = "slow_note" if i % 2 else f"only_{project}"
            sent = http.post(
                f"/v1/functions/{function}/invoke", json={"text": str(i)}, headers={"Prefer": "respond-async"}
            )
            assert sent.status_code == 202, sent.text
            ids.append(sent.json()["id"])
        return ids


def _finished(url: str, ids: list[str]) -> list[dict[str, Any]]:
    with httpx.Client(base_url=url, timeout=10) as http:
        done: list[dict[str, Any]] = []
        for job_id in ids:
            for _ in range(400):
                document: dict[str, Any] = http.get(f"/v1/jobs/{job_id}").json()
                if document["status"] not in ("queued", "running"):
                    break
                time.sleep(0.05)
            done.append(document)
        return done


@pytest.mark.slow
@pytest.mark.parametrize("shared", [False, True], ids=["default-settings", "one-jobs-file"])
def test_two_projects_on_one_machine_run_list_and_return_only_their_own_jobs(
    tmp_path: Path, router_cache: Path, shared: bool
) -> None:
    """The bug report: two `toolmesh up --module` projects on one machine claimed each other's
    jobs (6 of 10 failed "no function named 'slow_note'") and listed each other's results. Now
    0 of 20 run in the wrong project, with default settings and even pointed at one jobs file."""
    env = _env(tmp_path, router_cache)
    projects = {name: _project(tmp_path, name) for name in ("a", "b")}
    common = tmp_path / "common-data"
    extra = ["--data-dir", str(common)] if shared else []
    started = {
        name: start_up(["toolmesh", "up", "--module", f"{name}_tools", *extra], directory, env)
        for name, directory in projects.items()
    }
    try:
        urls = {name: f"http://127.0.0.1:{ready['http_port']}" for name, (_, ready) in started.items()}
        submitted = {name: _submit_all(urls[name], name) for name in projects}
        for name, ids in submitted.items():
            done = _finished(urls[name], ids)
            wrong = [d for d in done if d["status"] != "succeeded"]
            assert wrong == [], (
                f"project {name}: {len(wrong)} of {len(done)} jobs did not succeed: {wrong[:2]}"
            )
            texts = [d["result"]["content"][0]["text"] for d in done]
            assert all(text.startswith(f"{name}:") or text.startswith(f"{name}-only:") for text in texts), (
                texts
            )
        for name, other in (("a", "b"), ("b", "a")):
            with httpx.Client(base_url=urls[name], timeout=10) as http:
                listed = {job["id"] for job in http.get("/v1/jobs", params={"limit": 1000}).json()["jobs"]}
                assert listed == set(submitted[name]), "lists only its own project's jobs"
                for job_id in submitted[other]:
                    assert http.get(f"/v1/jobs/{job_id}").status_code == 404
    finally:
        for process, _ in started.values():
            stop(process)
    user_wide = Path(env["XDG_DATA_HOME"]) / "toolmesh" / "jobs.sqlite3"
    assert not user_wide.exists(), "the old user-wide jobs file is not used"
    if shared:
        assert not any((d / ".toolmesh").exists() for d in projects.values())
        with closing(sqlite3.connect(common / "jobs.sqlite3")) as db:
            projects_in_file = {row[0] for row in db.execute("SELECT DISTINCT project FROM jobs")}
        assert len(projects_in_file) == 2
    else:
        for directory in projects.values():
            assert (directory / ".toolmesh" / "jobs.sqlite3").is_file()


@pytest.mark.slow
def test_data_dir_moves_every_store_and_leaves_the_embedding_cache_user_wide(
    tmp_path: Path, router_cache: Path
) -> None:
    env = _env(tmp_path, router_cache)
    project = _project(tmp_path, "a")
    data = tmp_path / "elsewhere" / "data"
    process, ready = start_up(
        ["toolmesh", "up", "--module", "a_tools", "--data-dir", str(data)], project, env
    )
    try:
        url = f"http://127.0.0.1:{ready['http_port']}"
        (job_id,) = _submit_all(url, "a")[:1]
        assert _finished(url, [job_id])[0]["status"] == "succeeded"
        with httpx.Client(base_url=url, timeout=30) as http:
            routed = http.post("/v1/route", json={"prompt": "write a note: hello", "session_id": "s1"})
            assert routed.status_code == 200, routed.text
    finally:
        stop(process)
    assert {"jobs.sqlite3", "sessions.sqlite3", "learned.sqlite3"} <= {p.name for p in data.iterdir()}
    assert not (project / ".toolmesh").exists()
    # Function embeddings are a cache keyed by model and text: one for every project.
    assert (Path(env["XDG_DATA_HOME"]) / "toolmesh" / "embeddings.sqlite3").is_file()
    assert not (data / "embeddings.sqlite3").exists()


def test_an_unwritable_data_dir_fails_start_up_naming_it_and_how_to_choose_another(
    tmp_path: Path, router_cache: Path
) -> None:
    project = _project(tmp_path, "a")
    (tmp_path / "a-file").write_text("")
    data = tmp_path / "a-file" / "data"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolmesh",
            "up",
            "--module",
            "a_tools",
            "--data-dir",
            str(data),
            "--http-port=0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=project,
        env=_env(tmp_path, router_cache),
    )
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    # The first store to open names its file (the functions' state opens before the jobs).
    assert last.startswith(
        (
            f"toolmesh up: jobs: cannot write the jobs file {data / 'jobs.sqlite3'}: ",
            f"toolmesh up: function_state: cannot write the state file {data / 'function_state.sqlite3'}: ",
        )
    ), last
    assert "--data-dir DIR" in last and "[project] data_dir" in last


async def test_a_router_that_cannot_write_its_data_says_where_and_how(
    tmp_path: Path, router_cache: Path, gateway_factory: Any
) -> None:
    """Not "could not load its model": the directory, and the settings that choose another."""
    from toolmesh.config import RouterConfig
    from toolmesh.config.jobs_config import JobsConfig

    (tmp_path / "a-file").write_text("")
    unwritable = tmp_path / "a-file" / "router"
    router = RouterConfig(cache_dir=router_cache, data_dir=unwritable)
    gateway = await gateway_factory(router=router, jobs=JobsConfig(enabled=False))
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{gateway.http_port}") as http:
        answer = await http.post("/v1/route", json={"prompt": "add 2 and 3"})
    assert answer.status_code == 503
    message = answer.json()["error"]["message"]
    assert f"in {unwritable}" in message and "--data-dir DIR" in message, message


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("unshare") is None, reason="needs unshare (util-linux) for a read-only mount"
)
def test_a_read_only_project_keeps_its_data_in_the_user_data_directory(
    tmp_path: Path, router_cache: Path
) -> None:
    """A project directory the gateway cannot write (a read-only checkout, a ConfigMap): its data
    goes to ~/.local/share/toolmesh/projects/<project id>, and the jobs work as anywhere."""
    project = _project(tmp_path, "a")
    env = _env(tmp_path, router_cache)
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "true"], capture_output=True, timeout=10, check=False
    )
    if probe.returncode != 0:
        pytest.skip("cannot make a mount namespace here (needs root or user namespaces)")
    mount = f"mount --bind -o ro {project} {project} && exec toolmesh up --module a_tools"
    process, ready = start_up(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", f'{mount} "$@"', "up"], project, env
    )
    try:
        url = f"http://127.0.0.1:{ready['http_port']}"
        ids = _submit_all(url, "a")
        assert {d["status"] for d in _finished(url, ids)} == {"succeeded"}
    finally:
        stop(process)
    assert not (project / ".toolmesh").exists()
    (fallback,) = (Path(env["XDG_DATA_HOME"]) / "toolmesh" / "projects").iterdir()
    assert fallback.name.startswith("a-") and (fallback / "jobs.sqlite3").is_file()
