"""`kraftsim serve` as a process: the ready line and file, SIGTERM, --for, --record, bad input."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftsim.scenario import load_scenario
from kraftsim.scenario.runner import run_scenario
from kraftsim.sim import Simulation
from tests.cli_support import run
from tests.wire.client import API_VERSIONS_V3, rpc, wait_accepting

REPO = Path(__file__).resolve().parents[2]
#: Bounds on waiting for the server process (start-up imports and creates; a loaded machine is slow).
START_S, STOP_S = 60.0, 60.0


def _spawn(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "kraftsim", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def _stop(proc: subprocess.Popen) -> tuple[str, str]:
    """SIGTERM the server and collect its output (killed if it does not stop in time)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.communicate(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


def _wait_ready(proc: subprocess.Popen, ready_file: Path) -> dict:
    deadline = time.monotonic() + START_S
    while not ready_file.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the server did not become ready"
        time.sleep(0.05)
    return json.loads(ready_file.read_text())


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    d = tmp_path / "c"
    Simulation.create(d, controllers=1, brokers=1, release="4.4.0").close()
    return d


def test_ready_line_file_sigterm_and_the_directory_as_clients_left_it(cluster, tmp_path):
    ready = tmp_path / "ready.json"
    proc = _spawn(str(cluster), "--ready-file", str(ready), "--record", str(tmp_path / "rec.toml"))
    try:
        info = _wait_ready(proc, ready)
        assert set(info) == {"cluster_id", "bootstrap_servers", "bootstrap_controllers", "nodes"}
        assert [(n["id"], n["roles"], n["release"], n["broker"] is None, n["controller"] is None)
                for n in info["nodes"]] == [(1, ["controller"], "4.4.0", True, False),
                                            (2, ["broker"], "4.4.0", False, True)]
        assert info["bootstrap_servers"] == info["nodes"][1]["broker"]
        created = rpc(info["bootstrap_servers"], 19, 7, {"Topics": [{"Name": "t", "NumPartitions": 1,
                                                                      "ReplicationFactor": 1}]})
        assert created is not None and created[1]["Topics"][0]["ErrorCode"] == 0
        assert rpc(info["bootstrap_servers"], 18, 3, API_VERSIONS_V3) is not None
    finally:
        out, err = _stop(proc)
    assert proc.returncode == 0, err
    assert out.splitlines()[0] == (f"kraftsim serve: ready: bootstrap-servers {info['bootstrap_servers']} "
                                   f"bootstrap-controllers {info['bootstrap_controllers']}")
    assert "Traceback" not in err
    with Simulation.open(cluster, passive=True) as sim:
        image = sim.image(1)
        assert image is not None and image.topics.get_topic_by_name("t") is not None
    assert 'names = ["t"]' in (tmp_path / "rec.toml").read_text()


def test_for_stops_after_that_much_simulated_time(cluster, tmp_path):
    with Simulation.open(cluster, passive=True) as sim:
        before = sim.now_ms
    proc = _spawn(str(cluster), "--for", "3000", "--speed", "20")
    out, err = proc.communicate(timeout=STOP_S)
    assert proc.returncode == 0, err
    assert out.startswith("kraftsim serve: ready: bootstrap-servers 127.0.0.1:")
    with Simulation.open(cluster, passive=True) as sim:
        assert sim.now_ms - before >= 3000


def test_a_scenario_target_is_created_and_its_steps_run_first(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "s"\n[cluster]\ncombined = 1\nrelease = "4.4.0"\n'
                        '[[step]]\nop = "create-topics"\ncount = 2\n')
    record = tmp_path / "rec.toml"
    proc = _spawn(str(scenario), "--keep", str(tmp_path / "kept"), "--for", "100", "--record", str(record))
    out, err = proc.communicate(timeout=STOP_S)
    assert proc.returncode == 0, err
    with Simulation.open(tmp_path / "kept", passive=True) as sim:
        image = sim.image(1)
        assert image is not None and sorted(t.name for t in image.topics.sorted_topics()) == ["topic-0", "topic-1"]
    # the recording starts with the scenario's own steps, then the time served
    outcome = run_scenario(load_scenario(record), keep=tmp_path / "replayed")
    assert outcome.result.passed and [s.op for s in outcome.result.steps] == ["create-topics", "run"]
    with Simulation.open(tmp_path / "replayed", passive=True) as sim:
        assert sorted(t.name for t in sim.image(1).topics.sorted_topics()) == ["topic-0", "topic-1"]


def test_bad_targets_and_flags_exit_2_with_a_clear_message(capsys, tmp_path):
    code, _, err = run(capsys, "serve", str(tmp_path / "missing"))
    assert code == 2 and "no such cluster directory or scenario file" in err
    code, _, err = run(capsys, "serve", str(tmp_path))
    assert code == 2 and "not a cluster directory" in err
    fifo, loop = tmp_path / "fifo.toml", tmp_path / "loop"
    os.mkfifo(fifo)
    loop.symlink_to(loop)
    code, _, err = run(capsys, "serve", str(fifo))  # (it is there: "no such" sent the user looking for a typo)
    assert code == 2 and f"{fifo}: neither a cluster directory nor a scenario file (not a regular file)" in err
    code, _, err = run(capsys, "serve", str(loop))
    assert code == 2 and f"{loop}: too many levels of symbolic links" in err
    code, _, err = run(capsys, "serve", str(tmp_path), "--speed", "0")
    assert code == 2 and "--speed" in err
    code, _, err = run(capsys, "serve", str(tmp_path), "--host", " ")  # (every interface, advertised as nothing)
    assert code == 2 and "--host" in err and "expected an address clients can connect to" in err


def test_an_ipv6_host_is_advertised_in_brackets():
    """What the ready line and the ready file name is what a Kafka client parses
    (Utils.getHost takes an IPv6 literal in brackets)."""
    import kraftsim

    try:
        socket.socket(socket.AF_INET6).bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with kraftsim.serve(combined=1, release="4.4.0", host="::1") as k:
        address = k.bootstrap_servers
        assert re.fullmatch(r"\[::1\]:\d+", address), address
        port = int(address.rsplit(":", 1)[1])
        with socket.create_connection(("::1", port), timeout=10) as s:
            s.sendall(bytes(4))  # (a frame of size 0: closed, but the listener was there)



def test_a_record_file_that_could_not_be_written_or_would_replace_the_target_is_refused_first(capsys, tmp_path):
    """--record is written when the session ends: into a missing folder the session was
    served and its recording then lost; naming the served scenario file replaced it (as
    --ready-file naming it did, with the JSON of the addresses)."""
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "s"\n[cluster]\ncontrollers = 1\nrelease = "3.9"\n')
    before = scenario.read_bytes()
    for record, says in ((tmp_path / "no" / "r.toml", "no such directory"), (scenario, "is or lies inside the input")):
        code, out, err = run(capsys, "serve", str(scenario), "--for", "100", "--record", str(record))
        assert (code, out) == (2, ""), err
        assert f"--record {record}" in err and says in err
    code, out, err = run(capsys, "serve", str(scenario), "--for", "100", "--ready-file", str(scenario))
    assert (code, out) == (2, "") and f"--ready-file {scenario}: is or lies inside the input" in err
    assert scenario.read_bytes() == before


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_keep_folder_nothing_can_be_made_in_is_said_as_the_flags(capsys, tmp_path):
    """`serve SCENARIO --keep /proc/k` blamed the scenario file ("key `cluster`: the cluster
    cannot be created"); the flag is named now, as `scenario run --keep` names it."""
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "s"\n[cluster]\ncontrollers = 1\nrelease = "3.9"\n')
    code, out, err = run(capsys, "serve", str(scenario), "--for", "100", "--keep", "/proc/kraftsim-kept")
    assert (code, out) == (2, "")
    assert err == ("kraftsim: error: --keep /proc/kraftsim-kept: cannot create the folder /proc/kraftsim-kept: "
                   "No such file or directory\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


def test_a_ready_file_beside_the_served_clusters_own_files_is_allowed(capsys, tmp_path):
    """Only the cluster's own entries are protected: a ready file or recording kept in the
    cluster's folder is the user's to name; its state file and node folders are not."""
    d = tmp_path / "c"
    Simulation.create(d, controllers=1, brokers=1, release="3.9.0").close()
    state = (d / "cluster.json").read_bytes()
    for inside in (d / "cluster.json", d / "node-1" / "ready.json"):
        code, out, err = run(capsys, "serve", str(d), "--for", "100", "--ready-file", str(inside))
        assert (code, out) == (2, "") and f"--ready-file {inside}: is or lies inside the input" in err
    assert (d / "cluster.json").read_bytes() == state
    ready = d / "ready.json"
    code, out, err = run(capsys, "serve", str(d), "--for", "100", "--ready-file", str(ready), "--record",
                         str(d / "rec.toml"))
    assert code == 0, err
    assert json.loads(ready.read_text())["bootstrap_servers"] and (d / "rec.toml").exists()


def _kraftsim(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "kraftsim", *argv], capture_output=True, text=True, env=env,
                          timeout=START_S)


def _refused(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_cluster_commands_on_a_served_directory_are_carried_out_by_the_server(tmp_path):
    d = tmp_path / "c"
    Simulation.create(d, controllers=1, brokers=2, release="4.4.0").close()
    ready, rec = tmp_path / "ready.json", tmp_path / "rec.toml"
    # (faster than the wall clock: the restarted broker 3 is fenced ~10 s simulated before it listens)
    proc = _spawn(str(d), "--ready-file", str(ready), "--record", str(rec), "--speed", "20")
    try:
        info = _wait_ready(proc, ready)
        marker = d / ".kraftsim-serve"
        assert marker.stat().st_mode & 0o777 == 0o600
        endpoint = json.loads(marker.read_text())
        with socket.create_connection(("127.0.0.1", endpoint["port"]), timeout=10) as s:  # a wrong token: no answer
            s.sendall(json.dumps({"token": "0" * 32, "argv": ["cluster", "crash", str(d), "--nodes", "3"],
                                  "cwd": str(tmp_path)}).encode() + b"\n")
            assert s.recv(1) == b""
        with socket.create_connection(("127.0.0.1", endpoint["port"]), timeout=10) as s:  # JSON nested too deeply
            s.sendall(b"[" * 30_000 + b"\n")
            assert s.recv(1) == b""
        node3 = next(n["broker"] for n in info["nodes"] if n["id"] == 3)
        assert not _refused(node3)
        crashed = _kraftsim("cluster", "crash", str(d), "--nodes", "3")
        assert crashed.returncode == 0, crashed.stderr
        assert crashed.stdout.startswith("Node 3 crashed;")
        assert _refused(node3)  # the served cluster crashed it: its listener is closed
        status = _kraftsim("cluster", "status", str(d))
        assert status.returncode == 1, status.stderr  # not healthy: a node is down
        (row,) = [line for line in status.stdout.splitlines() if line.startswith("3 ")]
        assert "crashed" in row
        served_features = _kraftsim("features", "--cluster", str(d), "describe")
        assert served_features.returncode == 0, served_features.stderr
        created = _kraftsim("topics", "--cluster", str(d), "create", "--count", "1", "--prefix", "t")
        assert (created.returncode, created.stdout) == (0, "Created topic t0.\n"), created.stderr
        again = _kraftsim("topics", "--cluster", str(d), "create", "--count", "1", "--prefix", "t")
        assert (again.returncode, again.stdout) == (0, "Created topic t1.\n"), again.stderr  # the lowest free name
        named = _kraftsim("topics", "--cluster", str(d), "create", "--topic", "orders", "--topic", "b/c", "--config",
                          "retention.ms=1000")  # (refused in part: what it created is still recorded)
        assert (named.returncode, named.stdout) == (1, "Created topic orders.\n"), named.stderr
        grown = _kraftsim("topics", "--cluster", str(d), "alter", "t1", "--partitions", "3")
        assert (grown.returncode, grown.stdout) == (0, ""), grown.stderr
        # t0's one replica is on the crashed broker 3 or on 2: an unclean election has nothing to elect
        elected = _kraftsim("leader-election", "--cluster", str(d), "--election-type", "unclean", "--topic", "t0",
                            "--partition", "0")
        assert elected.stdout.startswith(("Valid replica already elected for partitions t0-0",
                                          "Error completing leader election (UNCLEAN) for partition: t0-0")), elected
        altered = _kraftsim("configs", "--cluster", str(d), "--alter", "--entity-type", "brokers",
                            "--entity-default", "--add-config", "log.retention.ms=60000")
        assert (altered.returncode, altered.stdout) == (0, "Completed updating config for default broker.\n"), altered
        started = _kraftsim("cluster", "start", str(d), "--nodes", "3")
        assert started.returncode == 0, started.stderr
        wait_accepting(node3)  # once broker 3 is past start-up, as a client retries
    finally:
        out, err = _stop(proc)
    assert proc.returncode == 0, err
    assert "Unhandled exception" not in err, err
    assert not (d / ".kraftsim-serve").exists()
    # Without the server, the same command opens the directory and prints the same (but for the
    # finalized epoch: the image's offset, which went on while the cluster was served).
    alone = _kraftsim("features", "--cluster", str(d), "describe")
    masked = [re.sub(r"Epoch: \d+", "Epoch: E", r.stdout) for r in (alone, served_features)]
    assert masked[0] == masked[1] and alone.returncode == served_features.returncode
    assert alone.stderr == served_features.stderr == ""
    steps = load_scenario(rec).steps
    assert [(s.op, getattr(s, "nodes", None) or getattr(s, "names", None)) for s in steps if s.op != "run"] == \
        [("crash", [3]), ("create-topics", ["t0"]), ("create-topics", ["t1"]), ("create-topics", ["orders"]),
         ("create-partitions", ["t1"]), ("alter-broker-config", None), ("start", [3])]
    assert [s.configs for s in steps if s.op == "create-topics"] == [None, None, {"retention.ms": "1000"}]
    (altered_step,) = [s for s in steps if s.op == "alter-broker-config"]
    assert (altered_step.broker, altered_step.configs, altered_step.delete) == (None, {"log.retention.ms": "60000"}, [])


def test_a_second_server_of_a_served_directory_is_refused_at_once(cluster, tmp_path):
    """One server per cluster directory: a second `serve` of it says who serves it and exits 75
    (busy, as every command that finds the directory held) without waiting for the lock."""
    ready = tmp_path / "ready.json"
    first = _spawn(str(cluster), "--ready-file", str(ready))
    try:
        _wait_ready(first, ready)
        second = _kraftsim("serve", str(cluster), "--for", "1")
        assert second.returncode == 75, second.stderr
        assert f"already served by process {first.pid} (kraftsim serve)" in second.stderr
        assert "Traceback" not in second.stderr and second.stdout == ""
    finally:
        _stop(first)
    assert first.returncode == 0


def test_a_marker_left_by_a_killed_server_is_ignored(cluster, tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (cluster / ".kraftsim-serve").write_text(json.dumps({"pid": gone.pid, "port": 1, "token": "x"}))
    described = _kraftsim("features", "--cluster", str(cluster), "describe")
    assert described.returncode == 0, described.stderr
    assert "metadata.version" in described.stdout


def test_a_marker_nested_too_deeply_is_ignored(cluster, tmp_path):
    """A damaged marker is no server: the command opens the directory itself (it was exit 70)."""
    (cluster / ".kraftsim-serve").write_text("[" * 100_000 + "]" * 100_000)
    described = _kraftsim("features", "--cluster", str(cluster), "describe")
    assert described.returncode == 0, described.stderr
    assert "metadata.version" in described.stdout


def test_the_python_api_takes_handed_over_commands_with_paths_resolved_by_the_client(tmp_path):
    """`kraftsim.serve()` carries out the cluster commands sent to its directory, as the CLI
    server does; a relative directory and `--timeline` file are the client's, and the server
    never changes its own working directory."""
    import kraftsim

    here = os.getcwd()
    with kraftsim.serve(controllers=1, brokers=1, release="4.4.0", directory=tmp_path / "c", speed=20.0) as k:
        crashed = subprocess.run([sys.executable, "-m", "kraftsim", "cluster", "crash", "c", "--nodes", "2"],
                                 capture_output=True, text=True, timeout=START_S, cwd=tmp_path,
                                 env={**os.environ, "PYTHONPATH": str(REPO)})
        assert crashed.returncode == 0, crashed.stderr
        assert crashed.stdout.startswith("Node 2 crashed;")
        assert _refused(k.address(2))
        ran = subprocess.run([sys.executable, "-m", "kraftsim", "cluster", "run", "c", "--ms", "500",
                              "--timeline", "events.jsonl"], capture_output=True, text=True, timeout=START_S,
                             cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)})
        assert ran.returncode in (0, 1), ran.stderr
        assert (tmp_path / "events.jsonl").is_file()  # where the client said, not the server's cwd
        assert os.getcwd() == here
        assert k.call(lambda s: s.sim.running_node(2)) is None
        k.start(2)
        wait_accepting(k.address(2))  # once broker 2 is past start-up, as a client retries


def test_a_forwarded_configs_command_is_recorded_as_its_alter_step():
    from kraftsim.cli.serve_cmd import CliCommands

    argv = ["configs", "--cluster", "/tmp/c", "--alter", "--entity-type", "brokers", "--entity-name", "2",
            "--add-config", "log.cleaner.threads=2,cleanup.policy=[compact,delete]", "--delete-config", "log.roll.ms"]
    assert CliCommands().step(argv, 0) == ("alter-broker-config", {
        "broker": 2, "configs": {"log.cleaner.threads": "2", "cleanup.policy": "compact,delete"},
        "delete": ["log.roll.ms"]})
    topic = ["configs", "--cluster", "/tmp/c", "--alter", "--entity-type", "topics", "--entity-name", "t",
             "--delete-config", "retention.ms"]
    assert CliCommands().step(topic, 0) == ("alter-topic-config", {"topic": "t", "configs": None,
                                                                   "delete": ["retention.ms"]})
    assert CliCommands().step(topic, 1) is None  # refused: nothing changed
    quotas = ["configs", "--cluster", "/tmp/c", "--alter", "--entity-type", "users", "--entity-default",
              "--entity-type", "clients", "--entity-name", "app", "--add-config", "producer_byte_rate=1024"]
    assert CliCommands().step(quotas, 0) == ("alter-client-quotas", {
        "user": None, "client_id": "app", "ip": None, "default": ["user"], "quotas": {"producer_byte_rate": 1024.0},
        "delete": None})
    for describe in (["configs", "--cluster", "/tmp/c", "--describe", "--entity-type", "topics"],
                     ["topics", "--cluster", "/tmp/c", "describe", "--topic", "t"]):
        assert CliCommands().step(describe, 0) is None  # (a command that only reads makes no step)


def test_a_forwarded_leader_election_is_recorded_as_the_partitions_it_elected():
    """Named as printed (a topic's name may hold '-'), even when others failed (exit 1); nothing
    elected, nothing recorded."""
    from kraftsim.cli.serve_cmd import CliCommands

    argv = ["leader-election", "--cluster", "/tmp/c", "--election-type", "UNCLEAN", "--all-topic-partitions"]
    printed = ("Successfully completed leader election (UNCLEAN) for partitions a-b-1, c-3, a-b-0\n"
               "Valid replica already elected for partitions c-0\n"
               "Error completing leader election (UNCLEAN) for partition: c-1: org.apache.kafka.common.errors."
               "EligibleLeadersNotAvailableException: Eligible topic partition leaders are not available.\n")
    assert CliCommands().step(argv, 1, printed) == ("elect-leaders", {"election_type": "unclean",
                                                                      "partitions": {"a-b": [1, 0], "c": [3]}})
    assert CliCommands().step(argv, 0, "Valid replica already elected for partitions c-0\n") is None
