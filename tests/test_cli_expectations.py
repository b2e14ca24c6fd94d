"""`toolscore expectations` as a user runs it: on the local SQLite store, and against a running server."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from tests.postgres import postgres_url
from tests.registry_builders import doc
from toolscore.collector.cli import main
from toolscore.collector.registry import (
    Expectation,
    PostgresStoreConfig,
    Registry,
    RegistryConfig,
    SqliteStoreConfig,
    load_paths,
)
from toolscore.collector.registry.api import RegistryClient, RegistryServer, RegistryServerConfig, start_registry_server
from toolscore.collector.serve.scores import ScoreStoreConfig
from toolscore.collector.serve.scores._store import ScoreStore
from toolscore.scorers import AgentRun, Score

DATA = Path(__file__).parent / "testdata" / "cli_expectations"
TOKEN = "cli-token"


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "store" / "registry.db")


def cli(*args: str, db: str) -> Result:
    return CliRunner().invoke(main, ["expectations", *args, "--db", db])


# -- local store ---------------------------------------------------------------------------------------


def test_apply_prints_what_changed_each_time(db: str) -> None:
    first = cli("apply", str(DATA / "v1"), db=db)
    again = cli("apply", str(DATA / "v1"), db=db)
    changed = cli("apply", str(DATA / "v2"), db=db)
    assert first.exit_code == 0, first.output
    assert first.stdout == "search created\nweather created\n"
    assert first.stderr == "2 expectation(s): 2 created, 0 updated, 0 unchanged\n"
    assert again.stdout == "search unchanged\nweather unchanged\n"
    assert changed.stdout == "billing created\nsearch unchanged\nweather updated\n"


def test_apply_validates_every_file_before_writing_any(db: str) -> None:
    result = cli("apply", str(DATA / "mixed"), db=db)
    assert result.exit_code == 1
    bad = DATA / "mixed" / "bad_regex.yaml"
    assert f'{bad}:4: match.attributes["tenant.id"]: bad regex' in result.stderr
    listed = cli("list", db=db)
    assert listed.stdout == "NAME  VERSION  ENABLED  SCORERS  MATCH\n"


def test_list_shows_a_table_in_name_order(db: str) -> None:
    cli("apply", str(DATA / "v1"), db=db)
    result = cli("list", db=db)
    assert result.stdout == (
        "NAME     VERSION  ENABLED  SCORERS         MATCH\n"
        'search   1        true     f1              {"attributes":{"tenant.id":{"regex":"^t-"}}}\n'
        'weather  1        true     tool_selection  {"agent":"weather-bot"}\n'
    )


def test_get_prints_the_document_with_its_version(db: str) -> None:
    cli("apply", str(DATA / "v1"), db=db)
    as_yaml = yaml.safe_load(cli("get", "weather", db=db).stdout)
    as_json = json.loads(cli("get", "weather", "-o", "json", db=db).stdout)
    expected = {**yaml.safe_load((DATA / "v1" / "weather.yaml").read_text()), "version": 1, "enabled": True}
    assert as_yaml == expected
    assert as_json == [expected]


def test_delete_then_history_keeps_the_versions_and_shows_the_deletion(db: str) -> None:
    cli("apply", str(DATA / "v1"), db=db)
    cli("apply", str(DATA / "v2"), db=db)
    deleted = cli("delete", "weather", db=db)
    cli("apply", str(DATA / "v1"), db=db)  # created again, as version 4
    history = cli("history", "weather", db=db)
    assert deleted.stdout == "weather deleted (version 3)\n"
    assert history.stdout == (
        "VERSION  CHANGE   ENABLED  SCORERS\n"
        "1        created  true     tool_selection\n"
        "2        updated  true     tool_selection\n"
        "3        deleted  -        -\n"
        "4        created  true     tool_selection\n"
    )
    as_yaml = list(yaml.safe_load_all(cli("history", "weather", "-o", "yaml", db=db).stdout))
    as_json = json.loads(cli("history", "weather", "-o", "json", db=db).stdout)
    assert as_yaml == as_json
    assert [v.get("deleted", False) for v in as_json] == [False, False, True, False]
    assert as_json[2] == {"name": "weather", "version": 3, "deleted": True}
    assert [v["scorers"][0]["expected_tool"] for v in as_json if "scorers" in v] == [
        "get_weather",
        "get_forecast",
        "get_weather",
    ]


def test_unknown_name_exits_1_saying_not_found(db: str) -> None:
    cli("apply", str(DATA / "v1"), db=db)
    result = cli("get", "nope", db=db)
    assert result.exit_code == 1
    assert result.stderr == "Error: expectation 'nope' not found\n"


@pytest.mark.parametrize("command", [["list"], ["get", "weather"], ["history", "weather"], ["delete", "weather"]])
def test_reading_a_store_that_does_not_exist_says_so_and_creates_nothing(db: str, command: list[str]) -> None:
    """A mistyped --db, or the command run away from the collector's directory, is not an empty registry."""
    result = cli(*command, db=db)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: no registry store at {db}: give the collector's registry.store.path")
    assert not Path(db).parent.exists()


@pytest.mark.parametrize("command", [["list"], ["apply", str(DATA / "v1")]], ids=["list", "apply"])
def test_the_score_store_given_for_the_registry_is_refused_and_left_unchanged(
    tmp_path: Path, command: list[str]
) -> None:
    """`toolscore serve` keeps both SQLite files in `.toolscore/`: given the other one, the registry would add its
    tables to it and answer as an empty registry."""
    scores = tmp_path / "scores.db"
    store = ScoreStore(ScoreStoreConfig(path=str(scores)))
    run = AgentRun(trace_id=f"{1:032x}", span_id=f"{1:016x}", agent_name="travel")
    store.record(
        run, Expectation.model_validate({**doc("travel"), "version": 1}), Score(name="f1", value=1.0, label="pass")
    )
    assert store.close()
    before = scores.read_bytes()
    result = cli(*command, db=str(scores))
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"Error: {scores} is a toolscore score store (the scored runs `toolscore runs` reads), not a registry: "
        "give the collector's registry.store.path with --db"
    )
    assert scores.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.db"]  # no -wal, no -shm left beside it


def test_delete_with_a_stale_version_is_refused(db: str) -> None:
    cli("apply", str(DATA / "v1"), db=db)
    cli("apply", str(DATA / "v2"), db=db)
    result = cli("delete", "weather", "--expected-version", "1", db=db)
    assert result.exit_code == 1
    assert "is at version 2, not the expected 1" in result.stderr
    assert cli("get", "weather", db=db).exit_code == 0


# -- reads leave the store as they found it -----------------------------------------------------------

READS = [["list", "-o", "json"], ["get", "weather", "-o", "json"], ["history", "weather", "-o", "json"]]
READ_IDS = ["list", "get", "history"]

_DIED_WRITING = (
    "import os, sys\n"
    "from toolscore.collector.registry import Registry, RegistryConfig, SqliteStoreConfig, load_paths\n"
    "registry = Registry(config=RegistryConfig(store=SqliteStoreConfig(path=sys.argv[1])))\n"
    "registry.apply(load_paths([sys.argv[2]]))\n"
    "os._exit(0)\n"
)
"""A collector that committed v2 and died before closing its store: the change is in the -wal file only."""


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file in `folder`, by name: its bytes and mtime, but for the -shm index (readers may update it)."""
    return {
        p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir()) if not p.name.endswith("-shm")
    }


def _weather_versions(output: str) -> list[int]:
    return [e["version"] for e in json.loads(output) if e["name"] == "weather"]


@contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """`folder` and its files made read-only, as a store the user may only read is; restored after."""
    files = list(folder.iterdir())
    for path in files:
        path.chmod(0o444)
    folder.chmod(0o555)
    try:
        yield
    finally:
        folder.chmod(0o755)
        for path in files:
            path.chmod(0o644)


@pytest.mark.integration
@pytest.mark.parametrize("command", READS, ids=READ_IDS)
def test_a_read_leaves_the_store_its_log_and_its_directory_as_it_found_them(db: str, command: list[str]) -> None:
    """A store opened writable would checkpoint a dead writer's log into the file and remove the log; a closed
    store's look must not leave -wal/-shm files behind either. (The tests run as root, whom the permissions do
    not stop: that the store cannot be written is checked in test_registry_store, by a write that fails.)"""
    assert cli("apply", str(DATA / "v1"), db=db).exit_code == 0
    folder = Path(db).parent
    closed = _files(folder)
    assert list(closed) == ["registry.db"]
    with _read_only(folder):
        idle = cli(*command, db=db)
        assert idle.exit_code == 0, idle.output
        assert _weather_versions(idle.stdout)[-1] == 1
        assert _files(folder) == closed

    subprocess.run([sys.executable, "-c", _DIED_WRITING, db, str(DATA / "v2")], check=True, timeout=60)
    died = _files(folder)
    assert list(died) == ["registry.db", "registry.db-wal"]
    result = cli(*command, db=db)
    assert result.exit_code == 0, result.output
    assert _weather_versions(result.stdout)[-1] == 2  # read from the log
    assert _files(folder) == died
    assert (folder / "registry.db-shm").exists()


@pytest.mark.parametrize("command", READS, ids=READ_IDS)
def test_a_read_answers_beside_a_live_writer_holding_the_write_lock(db: str, command: list[str]) -> None:
    """A registry opened writable would wait for the write lock (to create its tables) and time out."""
    with Registry(config=RegistryConfig(store=SqliteStoreConfig(path=db))) as live:
        live.apply(load_paths([DATA / "v1"]))
        assert _weather_versions(cli(*command, db=db).stdout)[-1] == 1
        live.apply(load_paths([DATA / "v2"]))
        writer = sqlite3.connect(db, isolation_level=None)
        try:
            writer.execute("BEGIN IMMEDIATE")  # another writer, in the middle of its transaction
            writer.execute("DELETE FROM toolscore_expectations")
            result = cli(*command, db=db)
        finally:
            writer.close()
    assert result.exit_code == 0, result.output
    assert _weather_versions(result.stdout)[-1] == 2  # the live writer's last commit, not the open transaction


@pytest.mark.parametrize("command", READS, ids=READ_IDS)
def test_a_read_of_a_file_without_the_registry_tables_is_refused_and_creates_none(
    tmp_path: Path, command: list[str]
) -> None:
    """Not an empty registry: the file was left as it is, and is no registry a collector wrote."""
    path = tmp_path / "other.db"
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE notes (text TEXT)")
    other.commit()
    other.close()
    before = path.read_bytes()
    result = cli(*command, db=str(path))
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: the SQLite file {path} holds no toolscore registry (no table toolscore_expectations, "
        "toolscore_changes; looked for tables prefixed 'toolscore_'): create one with `toolscore expectations "
        "apply --db ... FILE...`, or with `toolscore serve` given this database as registry.store\n"
    )
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


def _cli_process(*args: str, db: str) -> subprocess.CompletedProcess[str]:
    """The installed command in its own process: what an uncaught error prints there is a traceback."""
    return subprocess.run(
        [sys.executable, "-m", "toolscore.collector.cli", "expectations", *args, "--db", db],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.integration
def test_a_misspelt_required_key_is_reported_as_the_misspelling_and_errors_come_in_line_order(db: str) -> None:
    """`nme:` is one mistake: not "name: required key missing" at the top and the misspelling at the bottom."""
    path = Path(__file__).parent / "testdata" / "registry" / "invalid" / "misspelt_name.yaml"
    result = _cli_process("apply", str(path), db=db)
    assert result.returncode == 1
    assert result.stderr == (
        "Error: invalid expectations:\n"
        f"  {path}:3: nme: unknown key; did you mean `name`? (a required key, missing)\n"
        f"  {path}:7: scorers[0].mode: expected 'exact', 'flexible', 'strict', 'unordered', 'subset' or 'superset', "
        "got 'strickt'; did you mean `strict`?\n"
    )


@pytest.mark.integration
def test_serving_on_a_taken_port_exits_2_naming_the_option_without_a_traceback(db: str) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _cli_process("serve", "--listen", f"127.0.0.1:{port}", db=db)
    assert result.returncode == 2
    assert f"Invalid value for --listen: cannot listen on 127.0.0.1:{port}: Address already in use" in result.stderr
    assert "Traceback" not in result.stderr
    assert "add_port.cc" not in result.stderr


@pytest.mark.integration
def test_a_file_made_with_get_applies_and_its_version_is_said_to_be_ignored(db: str, tmp_path: Path) -> None:
    """`get > f; edit; apply f`: the version `get` printed is not read (the store numbers every write), and apply
    says so naming the file and line, rather than let a stale one look checked."""
    cli("apply", str(DATA / "v1"), db=db)
    edited = tmp_path / "weather.yaml"
    edited.write_text(cli("get", "weather", db=db).stdout.replace("enabled: true", "enabled: false"))
    cli("apply", str(DATA / "v2"), db=db)  # changed since the get: weather is at version 2, the file says 1
    result = _cli_process("apply", str(edited), db=db)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "weather updated\n"
    assert result.stderr.splitlines()[0] == (
        f"expectation 'weather' ({edited}:2) sets `version: 1`, which is ignored: files do not set versions, the "
        "store numbers every write itself (`toolscore expectations get` prints the live one); `toolscore "
        "expectations apply` writes over whatever version is live"
    )
    stored = yaml.safe_load(cli("get", "weather", db=db).stdout)
    assert (stored["version"], stored["enabled"]) == (3, False)


@pytest.mark.integration
def test_a_file_without_version_applies_without_a_word_about_it(db: str) -> None:
    result = _cli_process("apply", str(DATA / "v1"), db=db)
    assert result.returncode == 0, result.stderr
    assert "version" not in result.stderr


def _damage_page(path: Path, index: str) -> None:
    """Overwrite the root page of `index` with garbage, as a failing disk or a copy of a live file leaves one: the
    store still opens (the schema on page 1 is intact), and only a query that reads that index fails."""
    with closing(sqlite3.connect(path)) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (index,)).fetchone()
    with path.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\xff" * page_size)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("command", "index"),
    [
        (["list"], "toolscore_expectations_live"),
        (["get", "weather"], "sqlite_autoindex_toolscore_expectations_1"),
        (["history", "weather"], "toolscore_changes_by_name"),
        (["apply", str(DATA / "v2")], "sqlite_autoindex_toolscore_expectations_1"),
        (["delete", "search"], "toolscore_changes_by_name"),
    ],
    ids=["list", "get", "history", "apply", "delete"],
)
def test_a_query_failing_on_an_open_sqlite_store_exits_1_in_one_line_naming_the_command_and_the_store(
    db: str, command: list[str], index: str
) -> None:
    """Not a traceback: SQLite's error once the store is open (here SQLITE_CORRUPT) says what failed, where,
    like a store that cannot be opened does."""
    assert cli("apply", str(DATA / "v1"), db=db).exit_code == 0
    _damage_page(Path(db), index)
    result = _cli_process(*command, db=db)
    assert result.returncode == 1
    assert result.stderr == (
        f"Error: {command[0]} failed on the registry store {db}: DatabaseError: database disk image is malformed\n"
    )
    assert "Traceback" not in result.stdout + result.stderr


# -- against a server ----------------------------------------------------------------------------------


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RegistryServer]:
    registry = Registry(config=RegistryConfig(store=SqliteStoreConfig(path=str(tmp_path / "server.db"))))
    running = await start_registry_server(registry, RegistryServerConfig(port=0, token=TOKEN))
    yield running
    await running.stop(0)
    registry.close()


async def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[int, str, str]:
    """The installed command in a subprocess; the server keeps running on this test's loop meanwhile."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolscore.collector.cli",
        "expectations",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


@pytest.mark.integration
async def test_apply_and_read_back_through_the_server(server: RegistryServer, tmp_path: Path) -> None:
    target = ["--server", f"127.0.0.1:{server.port}", "--token", TOKEN]
    code, out, err = await run_cli("apply", str(DATA / "v1"), *target)
    assert (code, out) == (0, "search created\nweather created\n"), err
    code, out, _ = await run_cli("apply", str(DATA / "v2"), *target)
    assert out == "billing created\nsearch unchanged\nweather updated\n"
    env = {"TOOLSCORE_REGISTRY_SERVER": f"127.0.0.1:{server.port}"}
    _, listed, _ = await run_cli("list", "-o", "json", env=env, cwd=tmp_path)
    assert [(e["name"], e["version"]) for e in json.loads(listed)] == [("billing", 1), ("search", 1), ("weather", 2)]
    _, history, _ = await run_cli("history", "weather", *target)
    assert history.splitlines()[1:] == [
        "1        created  true     tool_selection",
        "2        updated  true     tool_selection",
    ]
    code, out, _ = await run_cli("delete", "billing", *target)
    assert (code, out) == (0, "billing deleted (version 2)\n")
    _, history, _ = await run_cli("history", "billing", "-o", "json", *target)
    assert [(v["version"], v.get("deleted", False)) for v in json.loads(history)] == [(1, False), (2, True)]
    assert not (tmp_path / ".toolscore").exists(), "the local store was opened"


@pytest.mark.integration
async def test_server_refusals_exit_1_with_the_reason(server: RegistryServer) -> None:
    target = f"127.0.0.1:{server.port}"
    code, _, err = await run_cli("apply", str(DATA / "v1"), "--server", target, "--token", "wrong")
    assert code == 1
    assert err == (
        f"Error: registry at {target}: UNAUTHENTICATED: the token given was refused: "
        "pass the server's token with --token or TOOLSCORE_REGISTRY_TOKEN\n"
    )
    code, _, err = await run_cli("delete", "billing", "--server", target)
    assert code == 1
    assert "UNAUTHENTICATED: no token was given: pass the server's token with --token or TOOLSCORE_REGISTRY_" in err
    code, _, err = await run_cli("get", "nope", "--server", target)
    assert (code, err) == (1, "Error: expectation 'nope' not found\n")
    code, _, err = await run_cli("apply", str(DATA / "mixed"), "--server", target, "--token", TOKEN)
    assert code == 1
    assert "bad regex" in err
    _, listed, _ = await run_cli("list", "--server", target)
    assert listed == "NAME  VERSION  ENABLED  SCORERS  MATCH\n"


@pytest.mark.integration
async def test_an_unreachable_server_exits_1() -> None:
    code, _, err = await run_cli("list", "--server", "127.0.0.1:1")
    assert code == 1
    assert err.startswith("Error: cannot reach the registry at 127.0.0.1:1")


# -- serve ---------------------------------------------------------------------------------------------


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    args = ["serve", "--listen", "127.0.0.1:0", "--db", str(tmp_path / "served.db"), "--token", TOKEN]
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolscore.collector.cli", "expectations", *args],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.fullmatch(r"registry API on 127\.0\.0\.1:(\d+) \(writes need the token\)\n", line)
    assert found is not None, line
    yield proc, int(found.group(1))
    if proc.poll() is None:
        proc.kill()
    proc.wait(30)
    proc.stderr.close()


@pytest.mark.integration
def test_serve_answers_and_stops_gracefully_on_sigterm(served: tuple[subprocess.Popen[str], int]) -> None:
    proc, port = served
    with RegistryClient(f"127.0.0.1:{port}", token=TOKEN) as client:
        client.apply(load_paths([DATA / "v1"]))
        assert [e.name for e in client.list()] == ["search", "weather"]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    assert proc.stderr is not None
    assert "registry API stopped" in proc.stderr.read()


# -- the PostgreSQL registry the collectors share ------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--listen", "127.0.0.1:99999"], "Error: Invalid value for --listen: must be <= 65535, got 99999\n"),
        (["--listen", "nohost"], "Error: Invalid value for --listen: 'nohost' is not host:port, e.g. 127.0.0.1:4320\n"),
        (["--tls-cert", __file__], "Error: --tls-cert and --tls-key go together: give both or neither\n"),
        (["--auth-reads"], "Error: --auth-reads needs --token\n"),
        (
            ["--token", ""],
            "Error: Invalid value for --token: the token must not be blank: leave it unset to turn auth off\n",
        ),
        (
            ["--token", "  "],
            "Error: Invalid value for --token: the token must not be blank: leave it unset to turn auth off\n",
        ),
    ],
)
def test_serve_options_that_cannot_work_are_named_by_option(tmp_path: Path, options: list[str], message: str) -> None:
    """Not a pydantic dump of RegistryServerConfig, whose keys are not what the user typed."""
    result = CliRunner().invoke(main, ["expectations", "serve", "--db", str(tmp_path / "r.db"), *options])
    assert result.exit_code == 2
    assert result.stderr.endswith(message)
    assert "pydantic" not in result.stderr


def test_db_takes_the_postgres_url_the_collector_replicas_share(postgres_dsn: str) -> None:
    url = postgres_url(postgres_dsn)
    applied = cli("apply", str(DATA / "v1"), db=url)
    assert applied.exit_code == 0, applied.output
    assert applied.stdout == "search created\nweather created\n"
    with Registry(config=RegistryConfig(store=PostgresStoreConfig(dsn=postgres_dsn))) as replica:
        assert [e.name for e in replica.list()] == ["search", "weather"]
    assert cli("delete", "search", db=url).stdout == "search deleted (version 2)\n"
    assert cli("list", "-o", "json", db=url).stdout.count('"name"') == 1


@pytest.mark.parametrize("command", READS, ids=READ_IDS)
def test_a_read_of_a_postgres_database_without_the_tables_creates_none(postgres_dsn: str, command: list[str]) -> None:
    """The reads' sessions are read-only: a registry opened writable would create the tables and answer empty.
    What is missing is said in one line, not as the driver's error about the probe query (`UndefinedTable:
    relation ... does not exist LINE 1: SELECT 1 FROM ...`)."""
    import psycopg

    url = postgres_url(postgres_dsn).replace("toolscore@", "toolscore:hunter2@")  # trust auth: ignored
    result = cli(*command, db=url)
    assert result.exit_code == 1
    shown = url.replace(":hunter2@", ":<redacted>@")
    assert result.stderr == (
        f"Error: the PostgreSQL database {shown} holds no toolscore registry (no table toolscore_expectations, "
        "toolscore_changes; looked for tables prefixed 'toolscore_'): create one with `toolscore expectations "
        "apply --db ... FILE...`, or with `toolscore serve` given this database as registry.store\n"
    )
    with psycopg.connect(postgres_dsn) as conn:
        tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()
    assert tables == []


def test_an_unreachable_database_exits_1_without_a_traceback_or_the_password() -> None:
    result = cli("list", db="postgresql://toolscore:hunter2@127.0.0.1:1/registry")
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Error: cannot open the PostgreSQL registry postgresql://toolscore:<redacted>@127.0.0.1:1/registry: "
        "OperationalError: "
    )
    assert "hunter2" not in result.stderr
    assert "Traceback" not in result.output


_CLI_APPLICATION = "toolscore-cli-under-test"


def _cli_url(dsn: str) -> str:
    """The URL `--db` is given, naming the command's sessions, so that the test finds their backends."""
    return postgres_url(dsn) + f"&application_name={_CLI_APPLICATION}"


def _terminated_mid_command(dsn: str, args: list[str], url: str, waiting: str) -> subprocess.CompletedProcess[str]:
    """`toolscore expectations ARGS --db URL` run in its own process, its session's backend terminated (as a
    server restart or a DBA does) while it waits in `waiting` (a `pg_stat_activity.wait_event_type`) in the middle
    of a command, once the store is open."""
    import psycopg

    proc = subprocess.Popen(
        [sys.executable, "-m", "toolscore.collector.cli", "expectations", *args, "--db", url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with psycopg.connect(dsn, autocommit=True) as admin:
            deadline = time.monotonic() + 4  # within the store's query_timeout_s (5 s), which would cancel it
            terminated = None
            while terminated is None and time.monotonic() < deadline and proc.poll() is None:
                terminated = admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = %s AND state = 'active' AND wait_event_type = %s",
                    (_CLI_APPLICATION, waiting),
                ).fetchone()
                time.sleep(0.02)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert terminated == (True,), f"the command never waited: {proc.returncode} {out} {err}"
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


_TERMINATED = "AdminShutdown: terminating connection due to administrator command"


@pytest.mark.integration
@pytest.mark.parametrize("command", [["apply", str(DATA / "v2")], ["delete", "weather"]], ids=["apply", "delete"])
def test_a_write_whose_backend_is_terminated_exits_1_in_one_line_without_the_password(
    postgres_dsn: str, command: list[str]
) -> None:
    """The write's session waits for a lock on the change log another session holds; its backend is terminated
    there. One line says which command failed on which database, the password redacted; nothing was written."""
    import psycopg

    url = _cli_url(postgres_dsn).replace("toolscore@", "toolscore:hunter2@")
    assert cli("apply", str(DATA / "v1"), db=url).exit_code == 0
    with psycopg.connect(postgres_dsn) as holder:
        holder.execute("LOCK TABLE toolscore_changes IN EXCLUSIVE MODE")  # reads go on, writes wait
        result = _terminated_mid_command(postgres_dsn, command, url, "Lock")
    assert result.returncode == 1
    shown = url.replace(":hunter2@", ":<redacted>@")
    assert result.stderr.startswith(f"Error: {command[0]} failed on the PostgreSQL registry {shown}: {_TERMINATED}")
    assert result.stderr.count("\n") == 1, result.stderr
    assert "hunter2" not in result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert _weather_versions(cli("list", "-o", "json", db=url).stdout) == [1]


@pytest.mark.integration
@pytest.mark.parametrize("command", READS, ids=READ_IDS)
def test_a_read_whose_backend_is_terminated_exits_1_in_one_line(postgres_dsn: str, command: list[str]) -> None:
    """The stored tables behind views that take a minute a row, so that the read is under way (the opening's check
    reads no row) when its backend is terminated."""
    import psycopg

    url = _cli_url(postgres_dsn)
    assert cli("apply", str(DATA / "v1"), db=url).exit_code == 0
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("CREATE FUNCTION slow() RETURNS boolean VOLATILE LANGUAGE sql AS 'SELECT pg_sleep(60) IS NULL'")
        for table in ("expectations", "changes"):
            conn.execute(f"ALTER TABLE toolscore_{table} RENAME TO stored_{table}")
            conn.execute(f"CREATE VIEW toolscore_{table} AS SELECT * FROM stored_{table} WHERE slow() IS NOT NULL")
    result = _terminated_mid_command(postgres_dsn, command, url, "Timeout")
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: {command[0]} failed on the PostgreSQL registry {url}: {_TERMINATED}")
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
