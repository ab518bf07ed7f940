# The part of xllamacpp that bench/real_model.py uses: llama.cpp's server and its parameters (C++ structs whose
# fields are set by name, so they are typed loosely here).
from typing import Any

class CommonParams:
    def __getattr__(self, name: str) -> Any: ...
    def __setattr__(self, name: str, value: Any) -> None: ...

class Server:
    def __init__(self, params: CommonParams) -> None: ...
