"""The files in deploy/ are valid for the real tools that read them (issue 10: promtool, amtool,
kubernetes-validate, systemd-analyze, docker-compose), and the Dockerfile's inputs agree with the project."""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tomllib
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.cli.common import database_of

ROOT = Path(__file__).parent.parent
DEPLOY = ROOT / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
SCALE_OUT = DEPLOY / "kubernetes-scale-out"  # kustomize refuses an overlay inside its base's directory
SCALE_OUT_FILES = (
    ["compose.scale-out.yaml"],
    ["compose.scale-out.yaml", "compose.local.yaml", "compose.scale-out.local.yaml"],
    ["compose.scale-out.yaml", "compose.local.yaml", "compose.scale-out.local.yaml", "ci/compose.scale-out.ci.yaml"],
)


def run_tool(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which(name)
    if binary is None:
        pytest.skip(f"{name} is not installed (.ci/run installs it)")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60)


def test_prometheus_config_and_rules_are_valid() -> None:
    done = run_tool("promtool", "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "9 rules found" in done.stdout


def test_the_rules_fire_as_their_unit_tests_say() -> None:
    """rules_test.yml: a quiet stretch between 10-minute cycles pages no one, a stall does, and so does a
    monitor that is down or not scraped at all."""
    done = run_tool("promtool", "test", "rules", str(DEPLOY / "prometheus" / "rules_test.yml"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_stall_threshold_the_rules_use_is_the_one_healthz_uses(tmp_path: Path) -> None:
    from prometheus_client import CollectorRegistry

    from monitor import config as config_module
    from monitor.daemon import Daemon
    from monitor.store import Store

    path = tmp_path / "m.yaml"
    path.write_text(
        "model: {id: builtin}\nagent: {mode: 'off'}\ntargets:\n"
        "- {name: a, url: 'http://127.0.0.1:9/', interval: 10m}\n- {name: b, url: 'http://127.0.0.1:9/', interval: 1h}\n"
    )
    daemon = Daemon(config_module.load(path), store=Store(tmp_path / "m.db"), registry=CollectorRegistry(), config_path=str(path))
    daemon.start(serve_metrics=False)
    try:
        assert daemon.metrics.registry.get_sample_value("monitor_last_cycle_max_age_seconds") == 3 * 3600 + 30
        path.write_text(path.read_text().replace("1h", "30s"))
        assert daemon.reload()
        assert daemon.metrics.registry.get_sample_value("monitor_last_cycle_max_age_seconds") == 3 * 600 + 30
    finally:
        daemon.stop()


def test_alertmanager_config_is_valid() -> None:
    done = run_tool("amtool", "check-config", str(DEPLOY / "prometheus" / "alertmanager.yml"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_rules_use_series_that_monitor_exports() -> None:
    from prometheus_client import CollectorRegistry

    from monitor.core.memory import MemoryStats, WorkingStats
    from monitor.metrics import Metrics

    metrics = Metrics(CollectorRegistry())
    metrics.watch_memory(lambda: MemoryStats(WorkingStats(), 0, 0))
    exported = {m.name for m in metrics.registry.collect()}
    rules = (DEPLOY / "prometheus" / "rules.yml").read_text()
    used = {word for word in rules.replace("(", " ").replace(")", " ").split() if word.startswith("monitor_")}
    used = {u.split("{")[0] for u in used}
    assert used <= exported | {f"{n}_total" for n in exported}, used - exported


def test_the_dockerfile_copies_files_that_exist_and_dockerignore_lets_through() -> None:
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    copied = [line.split()[1:-1] for line in lines if line.startswith("COPY ") and "--from=" not in line]
    sources = [source for group in copied for source in group]
    assert sources and all((ROOT / source).exists() for source in sources)
    allowed = [line[1:].rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines() if line.startswith("!")]
    assert all(any(source == a or source.startswith(a + "/") or a.startswith(source) for a in allowed) for source in sources)


def test_the_dockerfile_takes_its_base_as_an_argument_and_runs_healthy_as_non_root() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE=", text, re.M) and text.count("FROM ${BASE}") == 2  # multi-stage, one base
    assert "--require-hashes" in text and "ARG EXTRA_CA_CERTS" in text
    assert re.search(r"^USER 10001", text, re.M) and "HEALTHCHECK" in text and "/healthz" in text
    assert "MONITOR_METRICS_LISTEN=0.0.0.0:9108" in text and 'VOLUME ["/var/lib/monitor"]' in text


def test_the_images_default_config_validates() -> None:
    from monitor import config

    cfg = config.load(DEPLOY / "docker" / "monitor.yaml")
    assert cfg.database == "/var/lib/monitor/monitor.db" and cfg.targets


def test_the_healthcheck_asks_healthz_where_the_daemon_listens(tmp_path: Path) -> None:
    """The image's HEALTHCHECK follows `monitor run --metrics-listen` (a CMD override) over the image's
    $MONITOR_METRICS_LISTEN, and that over the mounted config's metrics port."""
    import os

    from servers import free_port, wait_for

    text = (ROOT / "Dockerfile").read_text()
    assert "COPY deploy/docker/healthcheck.py /opt/monitor/healthcheck.py" in text
    assert re.search(r'^  CMD \["/opt/monitor/bin/python", "/opt/monitor/healthcheck.py"\]$', text, re.M)
    healthcheck = DEPLOY / "docker" / "healthcheck.py"
    listening, unused = free_port(), free_port()
    config = tmp_path / "m.yaml"
    config.write_text(
        f"database: {tmp_path / 'm.db'}\nworkers: 1\nmodel: {{id: builtin}}\nagent: {{mode: 'off'}}\n"
        f"metrics: {{host: 127.0.0.1, port: {unused}}}\n"
        "targets: [{name: a, url: 'http://127.0.0.1:9/', interval: 1s}]\n"
    )
    env = {**os.environ, "MONITOR_METRICS_LISTEN": f"0.0.0.0:{unused}", "MONITOR_CONFIG": str(config)}

    def check(pid: int, **extra: str) -> int:
        return subprocess.run(
            [sys.executable, str(healthcheck), str(pid)], env={**env, **extra}, capture_output=True, timeout=30
        ).returncode

    daemon = subprocess.Popen(
        [sys.executable, "-m", "monitor", "run", "--config", str(config), "--metrics-listen", f"127.0.0.1:{listening}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: check(daemon.pid) == 0, timeout=30, every=0.2)
        this = os.getpid()  # no --metrics-listen on this command line: the env var, then the config
        assert check(this) != 0
        assert check(this, MONITOR_METRICS_LISTEN=f"0.0.0.0:{listening}") == 0
        config.write_text(config.read_text().replace(f"port: {unused}", f"port: {listening}"))
        assert check(this, MONITOR_METRICS_LISTEN="") == 0
    finally:
        daemon.terminate()
        daemon.wait(timeout=15)


def pins(lines: list[str]) -> dict[str, str]:
    found = {}
    for line in lines:
        match = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)", line.strip().strip('"').strip(","))
        if match:
            found[match.group(1).lower().replace("_", "-")] = match.group(2)
    return found


def test_the_lock_has_every_dependency_at_its_pinned_version_each_with_hashes() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    direct = pins(project["dependencies"])
    text = (ROOT / "requirements.lock").read_text()
    locked = pins(text.splitlines())
    assert {name: locked.get(name) for name in direct} == direct
    assert "setuptools" in locked  # the image installs the project with --no-build-isolation
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2].strip())
    assert len(entries) == len(locked) and all("--hash=sha256:" in entry for entry in entries)


def test_metrics_listen_sets_the_address_whatever_the_config_says() -> None:
    from monitor.config import ConfigError, MetricsConfig

    off = MetricsConfig(enabled=False, host="127.0.0.1", port=9108)
    assert off.listening_on("0.0.0.0:9200").model_dump(include={"enabled", "host", "port"}) == {
        "enabled": True,
        "host": "0.0.0.0",
        "port": 9200,
    }
    assert off.listening_on("[::]:9108").host == "::" and off.listening_on(":9108").host == "0.0.0.0"
    for bad in ("9108", "host:", "host:http", "0.0.0.0:70000"):
        with pytest.raises(ConfigError, match="HOST:PORT"):
            off.listening_on(bad)


def test_a_bad_metrics_listen_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "m.yaml"
    config.write_text(f"database: {tmp_path / 'm.db'}\ntargets: [{{name: a, url: 'http://127.0.0.1:9/'}}]\n")
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "run", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"MONITOR_METRICS_LISTEN": "everywhere", "PATH": ""},
    )
    assert done.returncode == 3 and "metrics listen address 'everywhere'" in done.stderr, done.stderr


# -- compose -----------------------------------------------------------------------------------


def test_compose_files_are_valid_for_docker_compose() -> None:
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.skip("docker-compose is not installed (.ci/deploy installs it)")
    env = {"PATH": "/usr/bin:/bin", "MONITOR_BASE": "base:ci", "MONITOR_IMAGE": "monitor:ci", "HOME": "/tmp", "POSTGRES_PASSWORD": "x"}
    for files in (
        ["compose.yaml"],
        ["compose.yaml", "compose.local.yaml"],
        ["compose.yaml", "compose.local.yaml", "ci/compose.ci.yaml"],
        *SCALE_OUT_FILES,
    ):
        args = [arg for f in files for arg in ("-f", str(DEPLOY / f))]
        done = subprocess.run(
            [binary, "--project-directory", str(DEPLOY), *args, "config", "-q"], capture_output=True, text=True, timeout=60, env=env
        )
        assert done.returncode == 0, (files, done.stderr)


def test_compose_prometheus_and_alertmanager_configs_are_valid(tmp_path: Path) -> None:
    for name in ("prometheus.yml", "prometheus.scale-out.yml"):
        config = (DEPLOY / "compose" / name).read_text().replace("/etc/prometheus/rules.yml", "rules.yml")
        (tmp_path / name).write_text(config)
        shutil.copy(DEPLOY / "prometheus" / "rules.yml", tmp_path / "rules.yml")
        done = run_tool("promtool", "check", "config", str(tmp_path / name))
        assert done.returncode == 0, done.stdout + done.stderr
    done = run_tool("amtool", "check-config", str(DEPLOY / "compose" / "alertmanager.yml"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_compose_and_ci_monitor_configs_validate() -> None:
    from monitor import config

    for path in (DEPLOY / "compose" / "monitor.yaml", DEPLOY / "ci" / "monitor.yaml", KUBERNETES / "monitor.yaml"):
        assert config.load(path).targets, path


def compose_services(*names: str) -> dict[str, Any]:
    """The services of compose files (in deploy/) as docker-compose merges them: anchors and ``<<`` resolved
    by the YAML loader; a later file's mappings (environment, depends_on) merged key by key into the
    earlier's, its volumes by mount point, its other keys in place of the earlier's."""
    services: dict[str, Any] = {}
    for name in names:
        for service, spec in yaml.safe_load((DEPLOY / name).read_text())["services"].items():
            merged = services.setdefault(service, {})
            for key, value in spec.items():
                if key == "volumes" and key in merged:
                    by_target = {default(v).split(":")[1]: v for v in merged[key] + value}
                    merged[key] = list(by_target.values())
                elif isinstance(value, dict) and isinstance(merged.get(key), dict):
                    merged[key] = {**merged[key], **value}
                else:
                    merged[key] = value
    return services


def replica_services(services: dict[str, Any]) -> dict[str, Any]:
    return {name: spec for name, spec in services.items() if re.fullmatch(r"monitor-\d+", name)}


def default(value: str) -> str:
    """What compose puts for ``${VAR:-default}`` when VAR is not set."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value)


@pytest.mark.parametrize("files", SCALE_OUT_FILES, ids=["official", "local", "ci"])
def test_the_scale_out_compose_runs_three_replicas_of_one_config_on_one_postgresql(
    files: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from monitor import config

    services = compose_services(*files)
    replicas = replica_services(services)
    assert sorted(replicas) == ["monitor-0", "monitor-1", "monitor-2"]
    host_ports = set()
    for name, spec in replicas.items():
        env = spec["environment"]
        index = int(name.rsplit("-", 1)[1])
        assert env["MONITOR_REPLICA_INDEX"] == str(index) and spec["hostname"] == name  # alerts.instance
        url = urllib.parse.urlsplit(env["MONITOR_DATABASE"])
        assert url.scheme == "postgresql" and url.hostname == "postgres" and url.password is None
        assert url.username == services["postgres"]["environment"]["POSTGRES_USER"]
        assert url.path == "/" + services["postgres"]["environment"]["POSTGRES_DB"]
        assert env["PGPASSWORD"] == services["postgres"]["environment"]["POSTGRES_PASSWORD"]
        assert env["PGPASSWORD"].startswith("${POSTGRES_PASSWORD:?")  # required: no default password
        assert "--db" not in spec["command"]  # it would win over $MONITOR_DATABASE
        assert spec["depends_on"]["postgres"] == {"condition": "service_healthy"}
        [port] = spec["ports"]
        host, _, inside = default(port).rpartition(":")
        assert host.startswith("127.0.0.1:") and inside == env["MONITOR_METRICS_LISTEN"].rsplit(":", 1)[1]
        host_ports.add(host)
        [mount] = [v for v in spec["volumes"] if v.endswith(":/etc/monitor/monitor.yaml:ro")]
        monkeypatch.setenv("MONITOR_REPLICA_INDEX", env["MONITOR_REPLICA_INDEX"])
        loaded = config.load(DEPLOY / default(mount).split(":")[0])
        assert (loaded.replicas, loaded.replica_index) == (len(replicas), index)
        assert database_of(loaded, env["MONITOR_DATABASE"]) == env["MONITOR_DATABASE"]  # $MONITOR_DATABASE wins
    assert len(host_ports) == len(replicas)  # its own metrics port each
    assert {s["depends_on"]["postgres"]["condition"] for s in replicas.values()} == {"service_healthy"}
    assert "postgres-data:/var/lib/postgresql/data" in services["postgres"]["volumes"]
    assert "pg_isready" in services["postgres"]["healthcheck"]["test"]
    assert "ports" not in services["postgres"]  # not published on the host


def test_prometheus_scrapes_every_replica_of_the_scale_out_compose() -> None:
    scrape = yaml.safe_load((DEPLOY / "compose" / "prometheus.scale-out.yml").read_text())["scrape_configs"]
    [job] = [job for job in scrape if job["job_name"] == "monitor"]
    [static] = job["static_configs"]
    replicas = replica_services(compose_services("compose.scale-out.yaml"))
    assert static["targets"] == [
        f"{name}:{replicas[name]['environment']['MONITOR_METRICS_LISTEN'].rsplit(':', 1)[1]}" for name in sorted(replicas)
    ]


def test_the_ci_scale_out_config_gives_every_replica_targets_and_the_killed_one_failing_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """What .ci/deploy's probe assumes of ci/monitor.scale-out.yaml: it reads the names monitor reads, and
    the replica it kills (2) checks targets that are down, so that its incidents are at stake, and it holds a
    lease, so that the other two take that share over while it is down."""
    import importlib.util

    from monitor import config
    from monitor.checks.ownership import Member, share

    spec = importlib.util.spec_from_file_location("scale_out_probe", ROOT / ".ci" / "scale_out_probe.py")
    assert spec is not None and spec.loader is not None
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    path = DEPLOY / "ci" / "monitor.scale-out.yaml"
    monkeypatch.setenv("MONITOR_REPLICA_INDEX", "0")
    loaded = config.load(path)
    assert probe.config_targets(path) == {t.name: t.url for t in loaded.targets}
    members = [Member(i) for i in range(loaded.replicas)]
    shares = [{t.name for t in share(loaded.targets, members, i)} for i in range(loaded.replicas)]
    assert all(shares) and sum(map(len, shares)) == len(loaded.targets) == 30
    assert any(name.startswith("down-") for name in shares[2])
    assert loaded.lease is not None and probe.settings(path) == (loaded.lease, loaded.defaults.interval) == (6.0, 2.0)
    deploy = (ROOT / ".ci" / "deploy").read_text()
    assert "kill=2 " in deploy and "deploy/ci/monitor.scale-out.yaml" in deploy and " takeover " in deploy


def test_the_debian_postgresql_entrypoint_initialises_once_and_takes_the_password() -> None:
    """compose/postgres-entrypoint.sh on the host's PostgreSQL, as the image runs it (a non-root user, an
    empty data directory): the first start makes the role, its password and the database; a second start
    keeps them (a new POSTGRES_PASSWORD changes nothing); no password, no cluster."""
    import pwd
    import tempfile

    psycopg = pytest.importorskip("psycopg")
    from postgres import bindir
    from servers import free_port, wait_for

    pg_bin = bindir()
    if pg_bin is None:
        pytest.skip("PostgreSQL is not installed (.ci/run installs it)")
    home = Path(tempfile.mkdtemp(prefix="monitor-pg-entrypoint-"))  # not tmp_path: its parents are root's, 0700
    data = home / "data"
    data.mkdir(mode=0o700)
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root; the image runs it as the package's postgres user
        user = pwd.getpwnam("postgres")
        for path in (home, data):
            os.chown(path, user.pw_uid, user.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    script = home / "postgres-entrypoint.sh"  # a copy the postgres user can read, wherever the checkout lives
    shutil.copyfile(DEPLOY / "compose" / "postgres-entrypoint.sh", script)
    script.chmod(0o644)

    def entrypoint(password: str) -> subprocess.Popen[str]:
        env = {
            "PATH": f"{pg_bin}:/usr/bin:/bin",
            "PGDATA": str(data),
            "POSTGRES_USER": "monitor",
            "POSTGRES_DB": "monitor",
            "POSTGRES_PASSWORD": password,
        }
        return subprocess.Popen(
            [
                *as_user,
                "env",
                *(f"{k}={v}" for k, v in env.items()),
                "sh",
                str(script),
                "-p",
                str(port),
                "-k",
                str(home),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def connected(server: subprocess.Popen[str], password: str) -> Any:
        assert server.poll() is None, server.communicate()[0]
        try:
            return psycopg.connect(f"postgresql://monitor@127.0.0.1:{port}/monitor", password=password, connect_timeout=5)
        except psycopg.OperationalError as exc:
            if "password authentication failed" in str(exc):
                raise
            return None  # not listening yet

    def stopped(server: subprocess.Popen[str]) -> str:
        """The image's STOPSIGNAL, SIGINT (a fast shutdown), to postgres: the entrypoint execs it, runuser does not
        pass SIGINT on."""
        pid = data / "postmaster.pid"
        if server.poll() is None and pid.exists():
            os.kill(int(pid.read_text().split()[0]), signal.SIGINT)
        elif server.poll() is None:  # still starting: runuser passes SIGTERM on
            server.terminate()
        return server.communicate(timeout=60)[0]

    try:
        no_password = entrypoint("")
        assert no_password.wait(timeout=30) == 1
        assert "set POSTGRES_PASSWORD" in no_password.communicate()[0] and not (data / "PG_VERSION").exists()

        server = entrypoint("first-password")
        try:
            with wait_for(lambda: connected(server, "first-password"), timeout=60) as conn:
                assert conn.execute("SELECT current_user, current_database()").fetchone() == ("monitor", "monitor")
                conn.execute("CREATE TABLE kept (x integer)")
            with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
                connected(server, "wrong-password")
        finally:
            first = stopped(server)
        assert "initialised" in first

        server = entrypoint("second-password")  # a restart on the same volume
        try:
            with wait_for(lambda: connected(server, "first-password"), timeout=60) as conn:
                assert conn.execute("SELECT count(*) FROM kept").fetchone() == (0,)
        finally:
            second = stopped(server)
        assert "initialised" not in second
    finally:
        shutil.rmtree(home, ignore_errors=True)


# -- Kubernetes --------------------------------------------------------------------------------


def kustomization(directory: Path = KUBERNETES) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((directory / "kustomization.yaml").read_text())
    return loaded


def rendered(directory: Path = KUBERNETES) -> list[dict[str, Any]]:
    """What ``kustomize build`` makes of a kustomization (no kustomize binary needed): its resources (a
    directory is a kustomization, rendered the same way), the generated ConfigMaps and Secrets, its patches,
    its images, and its namespace and labels set on each. Generated names keep no hash suffix:
    ``test_kustomize_builds_*`` compare this with the real build where kubectl or kustomize is installed."""
    k = kustomization(directory)
    docs: list[dict[str, Any]] = []
    for name in k["resources"]:
        path = directory / name
        docs += rendered(path) if path.is_dir() else [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    for generator in k.get("configMapGenerator", []):
        data = {name: (directory / name).read_text() for name in generator["files"]}
        generate(docs, generator, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": generator["name"]}, "data": data})
    for generator in k.get("secretGenerator", []):
        lines = [line for name in generator["envs"] for line in (directory / name).read_text().splitlines()]
        pairs = dict(line.split("=", 1) for line in lines if line.strip() and not line.startswith("#"))
        data = {key: base64.b64encode(value.encode()).decode() for key, value in pairs.items()}
        generate(
            docs, generator, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": generator["name"]}, "type": "Opaque", "data": data}
        )
    for patch in k.get("patches", []):
        body = yaml.safe_load((directory / patch["path"]).read_text() if "path" in patch else patch["patch"])
        target = patch.get("target") or {"kind": body["kind"], "name": body["metadata"]["name"]}
        [index] = [i for i, doc in enumerate(docs) if doc["kind"] == target["kind"] and doc["metadata"]["name"] == target["name"]]
        docs[index] = json_patch(docs[index], body) if isinstance(body, list) else merge_patch(docs[index], body)
    images = {image["name"]: f"{image.get('newName', image['name'])}:{image['newTag']}" for image in k.get("images", [])}
    labels = {key: value for entry in k.get("labels", []) for key, value in entry["pairs"].items()}
    for doc in docs:
        if doc["kind"] != "Namespace" and "namespace" in k:
            doc["metadata"]["namespace"] = k["namespace"]
        doc["metadata"]["labels"] = {**doc["metadata"].get("labels", {}), **labels}  # not on selectors
        for container in doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
            container["image"] = images.get(container["image"], container["image"])
    return docs


def generate(docs: list[dict[str, Any]], generator: dict[str, Any], made: dict[str, Any]) -> None:
    """A generator's output: a new object, or (``behavior: replace``) in place of the base's of that name."""
    same = [i for i, doc in enumerate(docs) if (doc["kind"], doc["metadata"]["name"]) == (made["kind"], generator["name"])]
    assert len(same) == (1 if generator.get("behavior") == "replace" else 0), (generator, same)
    if same:
        docs[same[0]] = made
    else:
        docs.append(made)


def merge_patch(doc: Any, patch: Any) -> Any:
    """A strategic merge patch, as far as these manifests use it: maps merge, ``null`` deletes, lists of
    named items (containers, env, volumes) merge by name with new items first, other lists are replaced."""
    if isinstance(doc, dict) and isinstance(patch, dict):
        merged = dict(doc)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = merge_patch(doc[key], value) if key in doc else value
        return merged
    named = isinstance(doc, list) and isinstance(patch, list) and all(isinstance(item, dict) and "name" in item for item in doc + patch)
    if named:
        patches = {item["name"]: item for item in patch}
        new = [item for item in patch if item["name"] not in {old["name"] for old in doc}]
        return new + [merge_patch(old, patches[old["name"]]) if old["name"] in patches else old for old in doc]
    return patch


def json_patch(doc: dict[str, Any], operations: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 add, replace and remove (the path's last ``-`` appends to a list)."""
    doc = copy.deepcopy(doc)
    for operation in operations:
        *parents, last = [part.replace("~1", "/").replace("~0", "~") for part in operation["path"].split("/")[1:]]
        where: Any = doc
        for part in parents:
            where = where[int(part)] if isinstance(where, list) else where[part]
        if operation["op"] == "remove":
            del where[int(last) if isinstance(where, list) else last]
        elif isinstance(where, list) and last == "-":
            where.append(operation["value"])
        elif isinstance(where, list) and operation["op"] == "add":
            where.insert(int(last), operation["value"])
        else:
            where[int(last) if isinstance(where, list) else last] = operation["value"]
    return doc


def kustomize_build(directory: Path) -> list[dict[str, Any]]:
    """The real ``kustomize build`` (kubectl's where kustomize is not installed)."""
    command = ("kustomize", "build") if shutil.which("kustomize") else ("kubectl", "kustomize")
    done = run_tool(*command, str(directory))
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def test_kubernetes_manifests_validate_against_the_kubernetes_schemas() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    core = [doc for doc in rendered() if not doc["apiVersion"].startswith("monitoring.coreos.com/")]
    assert {doc["kind"] for doc in core} >= {"StatefulSet", "Service", "ConfigMap", "NetworkPolicy"}
    for doc in core:
        kubernetes_validate.validate(doc, "1.33.0", strict=True)


def test_kustomize_builds_what_the_tests_read_and_it_validates() -> None:
    """The real ``kustomize build`` (kubectl's, where installed): hashed ConfigMap name referenced by the
    StatefulSet, the namespace and labels on everything, the same objects as ``rendered()``, and valid."""
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    built = kustomize_build(KUBERNETES)
    assert sorted(
        (d["kind"], d["metadata"]["name"].rsplit("-", 1)[0] if d["kind"] == "ConfigMap" else d["metadata"]["name"]) for d in built
    ) == sorted((d["kind"], d["metadata"]["name"]) for d in rendered())
    kinds = {d["kind"]: d for d in built}
    [config_map] = [d for d in built if d["kind"] == "ConfigMap"]
    volumes = {v["name"]: v for v in kinds["StatefulSet"]["spec"]["template"]["spec"]["volumes"]}
    assert volumes["config"]["configMap"]["name"] == config_map["metadata"]["name"] != "monitor-config"
    assert all(d["metadata"].get("namespace") == "monitor" for d in built if d["kind"] != "Namespace")
    assert all(d["metadata"]["labels"]["app.kubernetes.io/name"] == "monitor" for d in built)
    assert kinds["ServiceMonitor"]["spec"]["selector"]["matchLabels"].items() <= kinds["Service"]["metadata"]["labels"].items()
    for doc in built:
        if not doc["apiVersion"].startswith("monitoring.coreos.com/"):
            kubernetes_validate.validate(doc, "1.33.0", strict=True)


def by_kind(kind: str) -> dict[str, Any]:
    [doc] = [doc for doc in rendered() if doc["kind"] == kind]
    return doc


def test_the_statefulset_keeps_sqlite_on_a_volume_probes_healthz_and_runs_locked_down() -> None:
    spec = by_kind("StatefulSet")["spec"]
    pod = spec["template"]["spec"]
    [container] = pod["containers"]
    assert spec["replicas"] == 1 and spec["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["data"] == "/var/lib/monitor" and mounts["config"] == "/etc/monitor"
    assert {v["name"]: v for v in pod["volumes"]}["config"]["configMap"]["name"] == "monitor-config"
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert pod["securityContext"]["runAsNonRoot"] and container["securityContext"]["readOnlyRootFilesystem"]
    assert container["resources"]["requests"]["memory"] and container["resources"]["limits"]["memory"]
    service = by_kind("Service")["spec"]
    assert service["selector"].items() <= spec["template"]["metadata"]["labels"].items()
    assert service["ports"][0]["targetPort"] == container["ports"][0]["name"]


def test_servicemonitor_selects_the_service_and_prometheusrule_is_rules_yml() -> None:
    monitor = by_kind("ServiceMonitor")["spec"]
    assert monitor["selector"]["matchLabels"].items() <= by_kind("StatefulSet")["spec"]["template"]["metadata"]["labels"].items()
    assert monitor["endpoints"][0]["port"] == by_kind("Service")["spec"]["ports"][0]["name"]
    rule = by_kind("PrometheusRule")
    assert rule["spec"]["groups"] == yaml.safe_load((DEPLOY / "prometheus" / "rules.yml").read_text())["groups"]


def test_prometheusrule_expressions_pass_promtool(tmp_path: Path) -> None:
    path = tmp_path / "rules.yml"
    path.write_text(json.dumps({"groups": by_kind("PrometheusRule")["spec"]["groups"]}))
    done = run_tool("promtool", "check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_networkpolicy_allows_egress_only_to_dns_the_model_alertmanager_and_targets() -> None:
    policy = by_kind("NetworkPolicy")["spec"]
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    ports = sorted(p["port"] for rule in policy["egress"] for p in rule["ports"])
    assert ports == [53, 53, 443, 6443, 9093, 11434]
    assert all(rule.get("to") for rule in policy["egress"])  # no rule open to everywhere


# -- Kubernetes, scaled out: deploy/kubernetes-scale-out, three replicas on PostgreSQL ---------------


def scaled(kind: str) -> dict[str, Any]:
    [doc] = [doc for doc in rendered(SCALE_OUT) if doc["kind"] == kind]
    return doc


def scaled_container() -> dict[str, Any]:
    container: dict[str, Any]
    [container] = scaled("StatefulSet")["spec"]["template"]["spec"]["containers"]
    return container


def test_the_scale_out_overlay_validates_against_the_kubernetes_schemas() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    core = [doc for doc in rendered(SCALE_OUT) if not doc["apiVersion"].startswith("monitoring.coreos.com/")]
    assert {doc["kind"] for doc in core} >= {"StatefulSet", "Service", "ConfigMap", "Secret", "NetworkPolicy", "PodDisruptionBudget"}
    assert all(doc["metadata"].get("namespace") == "monitor" for doc in core if doc["kind"] != "Namespace")
    for doc in core:
        kubernetes_validate.validate(doc, "1.33.0", strict=True)


def test_the_scale_out_statefulset_runs_as_many_replicas_as_the_config_shares_targets_between(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from monitor import config

    path = tmp_path / "monitor.yaml"
    path.write_text(scaled("ConfigMap")["data"]["monitor.yaml"])
    assert "replicas: 3" in (SCALE_OUT / "monitor.yaml").read_text()  # the overlay's, not the base's
    spec = scaled("StatefulSet")["spec"]
    for index in range(spec["replicas"]):  # pod monitor-<N> is replica N: every ordinal is a valid index
        monkeypatch.setenv("MONITOR_REPLICA_INDEX", str(index))
        loaded = config.load(path)
        assert loaded.replicas == spec["replicas"] == 3 and loaded.replica_index == index
        assert "database" not in yaml.safe_load(path.read_text())  # it comes from $MONITOR_DATABASE (cli.common.database_of)
        assert database_of(loaded, "postgresql://monitor@postgres/monitor") == "postgresql://monitor@postgres/monitor"
        assert len(loaded.alerts.alertmanager) > 1  # every member of an Alertmanager cluster
    assert spec["podManagementPolicy"] == "Parallel"


def test_the_scale_out_takes_the_database_url_and_password_from_the_secret() -> None:
    container = scaled_container()
    assert "--db" not in container["args"]  # it would win over $MONITOR_DATABASE
    env = {e["name"]: e for e in container["env"]}
    secret = scaled("Secret")
    for name in ("MONITOR_DATABASE", "PGPASSWORD"):
        assert env[name]["valueFrom"]["secretKeyRef"] == {"name": secret["metadata"]["name"], "key": name}
        assert name in secret["data"]
    values = {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}
    url = urllib.parse.urlsplit(values["MONITOR_DATABASE"])
    assert url.scheme == "postgresql" and url.hostname and url.password is None  # the password is PGPASSWORD
    assert values["PGPASSWORD"].startswith("REPLACE-ME")  # a placeholder, marked as one
    assert all("password" not in str(e.get("value", "")).lower() for e in container["env"])


def test_the_scale_out_keeps_nothing_on_a_node_and_mounts_only_what_it_defines() -> None:
    spec = scaled("StatefulSet")["spec"]
    pod = spec["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "volumeClaimTemplates" not in spec
    assert volumes["data"] == {"name": "data", "emptyDir": {"sizeLimit": "64Mi"}}
    assert not any("hostPath" in v or "persistentVolumeClaim" in v for v in pod["volumes"])
    for container in pod["containers"]:
        assert {m["name"] for m in container["volumeMounts"]} <= volumes.keys()
        assert container["securityContext"]["readOnlyRootFilesystem"]


def test_the_scale_out_replicas_land_on_different_nodes_and_a_drain_takes_one_at_a_time() -> None:
    template = scaled("StatefulSet")["spec"]["template"]
    labels = template["metadata"]["labels"]
    spread = {c["topologyKey"]: c for c in template["spec"]["topologySpreadConstraints"]}
    node = spread["kubernetes.io/hostname"]
    assert node["maxSkew"] == 1 and node["whenUnsatisfiable"] == "DoNotSchedule"
    assert all(c["labelSelector"]["matchLabels"].items() <= labels.items() for c in spread.values())
    budget = scaled("PodDisruptionBudget")["spec"]
    assert budget["maxUnavailable"] == 1 and budget["selector"]["matchLabels"].items() <= labels.items()
    resources = scaled_container()["resources"]
    assert resources["requests"]["cpu"] and resources["requests"]["memory"] and resources["limits"]["memory"]
    assert "cpu" not in resources["limits"]  # a burst of checks is not throttled into schedule lag


def test_the_scale_out_is_scraped_on_every_replica_pages_on_a_missing_one_and_reaches_postgresql() -> None:
    service, spec = scaled("Service"), scaled("StatefulSet")["spec"]
    assert spec["serviceName"] == service["metadata"]["name"]
    assert service["spec"]["selector"].items() <= spec["template"]["metadata"]["labels"].items()  # every replica
    monitor = scaled("ServiceMonitor")["spec"]
    assert monitor["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]
    alerts = {rule["alert"] for group in scaled("PrometheusRule")["spec"]["groups"] for rule in group["rules"]}
    assert {"MonitorDown", "MonitorReplicaMissing", "MonitorReplicasDisagree"} <= alerts
    egress = scaled("NetworkPolicy")["spec"]["egress"]
    assert all(rule in egress for rule in by_kind("NetworkPolicy")["spec"]["egress"])  # the base's, and:
    assert [p["port"] for rule in egress for p in rule["ports"]].count(5432) == 1
    assert all(rule.get("to") for rule in egress)


def test_kustomize_builds_the_scale_out_overlay_as_the_tests_read_it_and_it_validates() -> None:
    """The real build: the StatefulSet references the generated (hash-named) Secret and ConfigMap,
    everything is in the namespace with the labels, and the objects are those ``rendered()`` reads."""
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    built = kustomize_build(SCALE_OUT)
    generated = {d["kind"]: d["metadata"]["name"] for d in built if d["kind"] in ("ConfigMap", "Secret")}
    assert generated["ConfigMap"].startswith("monitor-config-") and generated["Secret"].startswith("monitor-postgres-")
    renamed = {"monitor-config": generated["ConfigMap"], "monitor-postgres": generated["Secret"]}

    def named(doc: Any) -> Any:  # as rendered() reads it, with the build's names and labels
        if isinstance(doc, dict):
            return {key: named(renamed.get(value, value) if key == "name" else value) for key, value in doc.items()}
        return [named(item) for item in doc] if isinstance(doc, list) else doc

    mine = {(d["kind"], d["metadata"]["name"]): named(d) for d in rendered(SCALE_OUT)}
    unhashed = {hashed: name for name, hashed in renamed.items()}
    theirs = {(d["kind"], unhashed.get(d["metadata"]["name"], d["metadata"]["name"])): d for d in built}
    secret = theirs[("Secret", "monitor-postgres")]
    secret["data"] = {key: "".join(value.split()) for key, value in secret["data"].items()}  # kustomize wraps base64
    assert mine.keys() == theirs.keys()
    for key, doc in theirs.items():
        assert doc["metadata"].get("namespace") == ("monitor" if key[0] != "Namespace" else None), key
        assert doc["metadata"]["labels"]["app.kubernetes.io/name"] == "monitor", key
        unnamed = {**doc, "metadata": {**doc["metadata"], "name": key[1]}}  # the generated names checked above
        assert unnamed == {**mine[key], "metadata": {**mine[key]["metadata"], "name": key[1]}}, key
        if not doc["apiVersion"].startswith("monitoring.coreos.com/"):
            kubernetes_validate.validate(doc, "1.33.0", strict=True)
    [container] = theirs[("StatefulSet", "monitor")]["spec"]["template"]["spec"]["containers"]
    assert {e["valueFrom"]["secretKeyRef"]["name"] for e in container["env"] if "valueFrom" in e} == {generated["Secret"]}


# -- systemd -----------------------------------------------------------------------------------


def test_the_systemd_unit_needs_no_user_keeps_state_and_is_hardened() -> None:
    unit = (DEPLOY / "systemd" / "monitor.service").read_text()
    for line in (
        "DynamicUser=yes",
        "StateDirectory=monitor",
        "ProtectSystem=strict",
        "NoNewPrivileges=yes",
        "CapabilityBoundingSet=\n",
        "SystemCallFilter=@system-service",
    ):
        assert line in unit, line
    assert "User=" not in unit.replace("DynamicUser=", "")


def test_the_systemd_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    binary = shutil.which("systemd-analyze")
    if binary is None:
        pytest.skip("systemd-analyze is not installed")
    monitor = Path(sys.executable).parent / "monitor"
    if not monitor.exists():
        pytest.skip(f"no monitor script beside {sys.executable} (install with pip install -e .)")
    unit = tmp_path / "monitor.service"
    unit.write_text((DEPLOY / "systemd" / "monitor.service").read_text().replace("/opt/monitor/bin/monitor", str(monitor)))
    done = subprocess.run([binary, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    complaints = [line for line in (done.stdout + done.stderr).splitlines() if "monitor.service" in line]
    assert done.returncode == 0 and not complaints, done.stdout + done.stderr
    done = subprocess.run([binary, "security", "--offline=yes", str(unit)], capture_output=True, text=True, timeout=60)
    exposure = re.search(r"Overall exposure level for monitor.service: ([\d.]+)", done.stdout)
    assert exposure and float(exposure.group(1)) <= 2.0, done.stdout[-2000:] + done.stderr  # systemd's "OK" band


def test_a_reload_keeps_the_metrics_listen_override_and_warns_of_no_change(tmp_path: Path, caplog: Any) -> None:
    """The image sets MONITOR_METRICS_LISTEN: a SIGHUP must not claim the metrics address will change."""
    from prometheus_client import CollectorRegistry

    from monitor import config as config_module
    from monitor.daemon import Daemon
    from monitor.store import Store

    path = tmp_path / "m.yaml"
    path.write_text(
        "model: {id: builtin}\nagent: {mode: 'off'}\nmetrics: {host: 127.0.0.1, port: 9108}\n"
        "targets: [{name: a, url: 'http://127.0.0.1:9/', interval: 1h}]\n"
    )
    daemon = Daemon(
        config_module.load(path), store=Store(tmp_path / "m.db"), registry=CollectorRegistry(), config_path=str(path), listen="0.0.0.0:9200"
    )
    assert (daemon.config.metrics.host, daemon.config.metrics.port) == ("0.0.0.0", 9200)
    with caplog.at_level("WARNING", logger="monitor"):
        assert daemon.reload()
    assert (daemon.config.metrics.host, daemon.config.metrics.port) == ("0.0.0.0", 9200)
    assert "metrics settings change" not in caplog.text
    daemon.store.close()


def test_the_ci_deploy_scripts_parse() -> None:
    """.ci/deploy runs after the tests: a syntax error there should fail here first."""
    done = subprocess.run(["bash", "-n", str(ROOT / ".ci" / "deploy")], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([sys.executable, str(ROOT / ".ci" / "deploy_probe.py"), "--help"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "--prometheus" in done.stdout, done.stderr


def test_the_systemd_unit_raises_the_descriptor_limit_above_the_listeners_bounds() -> None:
    from monitor.web.guard import MAX_CONNECTIONS

    unit = (DEPLOY / "systemd" / "monitor.service").read_text()
    limit = re.search(r"^LimitNOFILE=(\d+)$", unit, re.MULTILINE)
    assert limit and int(limit.group(1)) >= 16 * (MAX_CONNECTIONS + 64), "systemd's default 1,024 is too few"
