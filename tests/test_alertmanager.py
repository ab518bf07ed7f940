"""Notifications reach a real Alertmanager (Debian's prometheus-alertmanager) through its v2 API."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from outbox import Stop, plain_alerts, queue
from past import known
from servers import free_port, wait_for

from monitor.config import AlertsConfig
from monitor.incidents.tracker import Event
from monitor.store import Store
from monitor.store.writes import IncidentWrites

CONFIG = """
route:
  receiver: "null"
  group_by: [alertname, target]
receivers:
  - name: "null"
"""


def ready(url: str, process: subprocess.Popen[bytes]) -> bool:
    """Whether Alertmanager answers ready; one that exited will not start."""
    if process.poll() is not None:
        raise AssertionError("Alertmanager did not start")
    try:
        return httpx.get(f"{url}/-/ready", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


@contextmanager
def running_alertmanager(directory: Path, port: int | None = None, config: str = CONFIG) -> Iterator[str]:
    """A real Alertmanager on loopback (on ``port`` when given), stopped on exit."""
    binary = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    if binary is None:
        pytest.skip("Alertmanager is not installed (Debian package prometheus-alertmanager; .ci/run installs it)")
    (directory / "am.yml").write_text(config)
    url = f"http://127.0.0.1:{port or free_port()}"
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={directory / 'am.yml'}",
            f"--storage.path={directory / 'data'}",
            f"--web.listen-address={url.removeprefix('http://')}",
            "--cluster.listen-address=",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: ready(url, process), timeout=20, every=0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[str]:
    with running_alertmanager(tmp_path) as url:
        yield url


def active_alerts(url: str) -> list[dict[str, Any]]:
    alerts: list[dict[str, Any]] = httpx.get(f"{url}/api/v2/alerts", params={"active": "true", "silenced": "true"}).json()
    return alerts


def test_an_incident_fires_then_resolves_in_alertmanager(alertmanager: str, db_path: str, stopped: Stop) -> None:
    store = Store(db_path)
    alerts = stopped(plain_alerts(AlertsConfig.model_validate({"alertmanager": alertmanager}), store))
    incident_id = IncidentWrites(store).open_incident("api", "consecutive", "3 consecutive failures of api")
    IncidentWrites(store).update_incident(incident_id, diagnosis="the api returns 500 since deploy 4711")
    queue(alerts, Event("opened", known(store.incidents.incident(incident_id))))
    assert alerts.deliver_due() == 1

    [alert] = active_alerts(alertmanager)
    assert alert["labels"] == {
        "alertname": "MonitorIncident",
        "target": "api",
        "incident": f"{store.incidents.install_id}-{incident_id}",
        "instance": socket.gethostname(),
        "source": "monitor",
    }
    assert alert["annotations"]["diagnosis"] == "the api returns 500 since deploy 4711"
    assert (alert["annotations"]["pattern"], alert["annotations"]["severity"]) == ("consecutive", "critical")

    IncidentWrites(store).update_incident(incident_id, pattern="flapping", severity="warning")  # the same alert, updated
    queue(alerts, Event("updated", known(store.incidents.incident(incident_id))))
    assert alerts.deliver_due() == 1
    [alert] = active_alerts(alertmanager)
    assert alert["annotations"]["pattern"] == "flapping"
    assert alert["status"]["state"] == "active"

    IncidentWrites(store).close_incident(incident_id)
    queue(alerts, Event("resolved", known(store.incidents.incident(incident_id))))
    assert alerts.deliver_due() == 1
    wait_for(lambda: active_alerts(alertmanager) == [], timeout=5, every=0.1)


class Clock:
    def __init__(self) -> None:
        self.now = time.time() - 3600  # runs ahead below, yet stays in Alertmanager's past

    def __call__(self) -> float:
        return self.now


def test_a_resolved_incident_never_fires_again_after_alertmanager_comes_back(tmp_path: Path, db_path: str, stopped: Stop) -> None:
    clock = Clock()
    port = free_port()
    store = Store(db_path, clock=clock)
    alerts = stopped(plain_alerts(AlertsConfig.model_validate({"alertmanager": f"http://127.0.0.1:{port}"}), store, clock=clock))
    incident_id = IncidentWrites(store).open_incident("api", "consecutive", "3 consecutive failures of api")
    queue(alerts, Event("opened", known(store.incidents.incident(incident_id))))
    for _ in range(4):  # Alertmanager is down: the firing message backs off further each time
        alerts.deliver_due()
        alerts.refresh(store.incidents.open_incidents())  # housekeeping keeps re-sending the firing alert
        clock.now += 60
    IncidentWrites(store).close_incident(incident_id)
    queue(alerts, Event("resolved", known(store.incidents.incident(incident_id))))
    alerts.refresh(store.incidents.open_incidents())
    assert alerts.deliver_due() == 0

    with running_alertmanager(tmp_path, port) as url:
        deadline = clock.now + 3600
        while store.outbox.pending_notifications() and clock.now < deadline:
            alerts.deliver_due()
            clock.now += 0.5
        assert store.outbox.pending_notifications() == 0
        assert active_alerts(url) == []


def test_two_installs_never_merge_their_incidents(alertmanager: str, tmp_path: Path, stopped: Stop) -> None:
    """Each database numbers its incidents from 1: the alert's identity must still be its own."""
    for name in ("one", "two"):
        store = Store(tmp_path / f"{name}.db")
        alerts = stopped(plain_alerts(AlertsConfig.model_validate({"alertmanager": alertmanager, "instance": "edge-1"}), store))
        incident_id = IncidentWrites(store).open_incident("api", "consecutive", f"api down, seen by {name}")
        queue(alerts, Event("opened", known(store.incidents.incident(incident_id))))
        assert alerts.deliver_due() == 1
    found = active_alerts(alertmanager)
    assert sorted(a["annotations"]["summary"] for a in found) == ["api down, seen by one", "api down, seen by two"]
    assert {a["labels"]["instance"] for a in found} == {"edge-1"}
    assert len({a["labels"]["incident"] for a in found}) == 2


def test_the_shipped_config_pages_once_for_one_outage(tmp_path: Path, db_path: str, stopped: Stop) -> None:
    """monitor's incident and Prometheus's MonitorTargetDown for the same target: one of them notifies."""
    shipped = (Path(__file__).parent.parent / "deploy" / "prometheus" / "alertmanager.yml").read_text()
    with running_alertmanager(tmp_path, config=shipped) as url:
        store = Store(db_path)
        alerts = stopped(plain_alerts(AlertsConfig.model_validate({"alertmanager": url}), store))
        incident_id = IncidentWrites(store).open_incident("api", "consecutive", "3 consecutive failures of api")
        queue(alerts, Event("opened", known(store.incidents.incident(incident_id))))
        assert alerts.deliver_due() == 1
        rule = {
            "labels": {
                "alertname": "MonitorTargetDown",
                "target": "api",
                "job": "monitor",
                "instance": "127.0.0.1:9108",
                "severity": "warning",
            },
            "annotations": {"summary": "api is down: its last checks were critical"},
        }
        assert httpx.post(f"{url}/api/v2/alerts", json=[rule]).status_code == 200

        def states() -> dict[str, str]:
            return {a["labels"]["alertname"]: a["status"]["state"] for a in active_alerts(url)}

        wait_for(lambda: states().get("MonitorTargetDown") == "suppressed", timeout=5, every=0.1)
        assert states() == {"MonitorIncident": "active", "MonitorTargetDown": "suppressed"}


def test_every_member_of_an_alertmanager_cluster_gets_every_alert(tmp_path: Path, db_path: str, stopped: Stop) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with running_alertmanager(tmp_path / "a") as first, running_alertmanager(tmp_path / "b") as second:
        store = Store(db_path)
        alerts = stopped(plain_alerts(AlertsConfig.model_validate({"alertmanager": [first, second]}), store))
        incident_id = IncidentWrites(store).open_incident("api", "consecutive", "3 consecutive failures of api")
        assert queue(alerts, Event("opened", known(store.incidents.incident(incident_id)))) == 2
        assert alerts.deliver_due() == 2
        [one], [other] = active_alerts(first), active_alerts(second)
        assert one["labels"] == other["labels"] and one["labels"]["target"] == "api"
        alerts.refresh(store.incidents.open_incidents())  # re-sent to both, one pending message per member
        assert store.outbox.pending_notifications() == 2 and alerts.deliver_due() == 2
        alerts.config = AlertsConfig.model_validate({"alertmanager": first})  # a reload leaves one member
        alerts.refresh(store.incidents.open_incidents())
        assert alerts.deliver_due() == 1
        store.close()
