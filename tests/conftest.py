from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from servers import Misbehaving, openssl  # noqa: E402


@pytest.fixture(scope="session")
def web() -> Iterator[Misbehaving]:
    """One misbehaving loopback server for the whole session."""
    with Misbehaving() as server:
        yield server


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "monitor.db")


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, and a certificate for 127.0.0.1 and localhost that it signed and that expires in 5 days."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    where = tmp_path_factory.mktemp("pki")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "3650", "-subj", "/CN=monitor test CA", cwd=where)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=127.0.0.1", cwd=where)
    (where / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "5", "-extfile", "san.cnf", cwd=where)
    return where
