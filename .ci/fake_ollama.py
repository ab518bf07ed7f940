"""CI's model server: tests/ollama.py's scripted Ollama, on 0.0.0.0:11434 inside its container."""

import sys
import threading

sys.path.insert(0, "/tests")

from ollama import FakeOllama  # noqa: E402


class Served(FakeOllama):
    def server_bind(self):
        self.server_address = ("0.0.0.0", 11434)
        super().server_bind()


with Served():
    threading.Event().wait()
