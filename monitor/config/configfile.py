"""The config file as edits write it back: its version, whether it can be written, and the one way to write it.

:meth:`ConfigFile.change` is the whole story of an edit: under a lock (a thread's, and ``flock`` for another process
editing the same file), the file is read, its version (a hash of its bytes) compared with the one the edit was made
against, the edit made to its text (:mod:`monitor.config.edits`), the result validated by the loader the daemon uses
(:func:`~monitor.config.loader.parse_bytes`), and only then written: to a new file beside it, fsynced, renamed over it.
A reader sees the old file or the new one, never half of each; two edits against one version make one change and
one refusal (412).
"""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import hashlib
import os
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.config import safeyaml
from monitor.config.edits import Edit, EditError, apply, item_key
from monitor.config.errors import ConfigError
from monitor.config.loader import MAX_BYTES, parse_bytes
from monitor.config.targetfiles import FileError, read_bytes


def version(data: bytes) -> str:
    """A config's version: the first 20 hex digits of the SHA-256 of its bytes."""
    return hashlib.sha256(data).hexdigest()[:20]


@dataclass(frozen=True)
class Changed:
    """What an edit did: the versions before and after, and the lines that changed (a unified diff)."""

    edit: Edit
    before: str
    after: str
    diff: str


class ConfigFile:
    """The config file at ``path``, as edits from the web UI and the API read and write it."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def read(self) -> tuple[bytes, str]:
        """The file's bytes and their version."""
        try:
            data = read_bytes(self.path, MAX_BYTES)
        except FileError as exc:
            raise EditError(f"{self.path}: {exc.message}") from None
        return data, version(data)

    def items(self, section: str) -> tuple[list[tuple[str | int, Any]], str]:
        """The items of ``section`` as written (``${VAR}`` not substituted), each with its key, and the version read."""
        document, seen = self._document()
        listed = document.get(section)
        return [(item_key(section, item, n), item) for n, item in enumerate(listed if isinstance(listed, list) else [])], seen

    def _document(self) -> tuple[dict[str, Any], str]:
        data, seen = self.read()
        try:
            document, _ = safeyaml.load(data, max_bytes=MAX_BYTES)
        except safeyaml.YamlError as exc:
            raise EditError(f"{self.path}: {exc.message} (line {exc.line}): fix the file first") from None
        return (document if isinstance(document, dict) else {}), seen

    def unwritable(self) -> str | None:
        """Why an edit cannot be written back to this file, or None when one can."""
        if self.path.is_symlink():
            return (
                f"{self.path} is a symbolic link: edits are not written through one (run the daemon with --config naming the file itself)"
            )
        listed = self._document()[0].get("target_files")
        if listed:
            return (
                f"this config lists targets in target files (target_files: {listed}): "
                "they are edited as files (or by the tool that writes them), not from the UI or the API"
            )
        if not os.access(self.path, os.W_OK):
            return f"{self.path} is read-only for this process: edits cannot be written back"
        if not os.access(self.path.parent, os.W_OK | os.X_OK):
            return f"the folder {self.path.parent} is not writable: an edit is written beside the file, then renamed over it"
        return None

    def change(self, edit: Edit, expected: str) -> Changed:
        """Make ``edit`` to the file, if it is still at version ``expected``: validated before it is written, written
        atomically. :class:`EditError` says why not (412: changed since; 422: the result is no valid config)."""
        with self._locked():
            data, current = self.read()
            if expected != current:
                raise EditError(
                    f"the config changed since version {expected} was read (it is {current} now): read it again and change that", 412
                )
            why = self.unwritable()
            if why is not None:
                raise EditError(why, 409)
            text = data.decode("utf-8")
            new = apply(text, edit).encode("utf-8")
            try:
                parse_bytes(new, str(self.path), base=self.path.parent)
            except ConfigError as exc:
                raise EditError(f"the config would not load after {edit.said()}:\n{exc}", 422) from None
            self._write(new)
            diff = "".join(difflib.unified_diff(text.splitlines(True), new.decode().splitlines(True), str(self.path), str(self.path)))
            return Changed(edit, current, version(new), diff)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """This process's lock, then an exclusive ``flock`` on the file that is at ``path`` now (a rename replaces it:
        the lock is taken again on the new one)."""
        with self._lock:
            while True:
                fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    if os.fstat(fd).st_ino == os.stat(self.path).st_ino:
                        yield
                        return
                finally:
                    os.close(fd)  # closing releases the lock

    def _write(self, data: bytes) -> None:
        """``data`` in a new file beside the config, fsynced, renamed over it, with the old file's mode."""
        mode = os.stat(self.path).st_mode & 0o7777
        temporary = self.path.parent / f".{self.path.name}.{secrets.token_hex(4)}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        folder = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)  # the rename itself survives a crash
        finally:
            os.close(folder)
