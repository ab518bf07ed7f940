from abc import ABCMeta
from typing import Any, ClassVar

class Tool(metaclass=ABCMeta):
    name: str
    description: str
    inputs: dict[str, dict[str, Any]]
    output_type: str
    skip_forward_signature_validation: ClassVar[bool]
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    def forward(self, *args: Any, **kwargs: Any) -> Any: ...
    def __call__(self, *args: Any, sanitize_inputs_outputs: bool = False, **kwargs: Any) -> Any: ...
