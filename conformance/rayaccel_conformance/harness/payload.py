"""The tensors a transport check sends, and their digests: RAC301 and RAC311 between Ray actors, RAC272 between
processes without Ray. Standard library only (torch imported when called), as the processes that receive import it."""

from __future__ import annotations

import ctypes
import hashlib
from typing import Any

#: Shapes and dtypes sent: several tensors, an empty one, odd sizes, a 2-D one, 4 MiB in all.
PAYLOAD = (((1 << 20,), "float32"), ((0,), "int64"), ((3, 5), "int16"), ((4099,), "uint8"))


def payload(seed: int) -> list[Any]:
    """:data:`PAYLOAD`'s tensors, filled with random bytes from ``seed``."""
    import torch

    g = torch.Generator().manual_seed(seed)
    out = []
    for shape, dtype in PAYLOAD:
        n = 1
        for s in shape:
            n *= s
        raw = torch.randint(0, 256, (n * getattr(torch, dtype).itemsize,), dtype=torch.uint8, generator=g)
        out.append(raw.view(getattr(torch, dtype)).reshape(shape))
    return out


def digest(tensors: list[Any]) -> list[str]:
    """Each tensor's bytes as a SHA-256, with its shape and dtype."""
    return [hashlib.sha256(_bytes(t)).hexdigest() + f" {tuple(t.shape)} {t.dtype}" for t in tensors]


def _bytes(t: Any) -> bytes:
    c = t.contiguous()
    n = c.numel() * c.element_size()
    return ctypes.string_at(c.data_ptr(), n) if n else b""
