"""The `__cuda_array_interface__` of a device array, also for torch's bfloat16 tensors.

    cuda_array_interface(torch.ones(4, device="cuda", dtype=torch.bfloat16))
    # {"shape": (4,), "typestr": "bfloat16", "data": (pointer, False), "strides": (2,), ...}

torch's `__cuda_array_interface__` has no typestr for bfloat16 (the protocol follows numpy's
array interface, which has no bfloat16) and raises for such tensors; this module describes
them from the tensor itself, with "bfloat16" as typestr (the name numpy knows once ml_dtypes is
imported: `element_types.bfloat16`). Every other object answers with its own interface, or
None. Nothing here imports torch or CUDA.
"""

from __future__ import annotations

from typing import Any

from loopopt.element_types import bfloat16


def cuda_array_interface(value: Any) -> dict[str, Any] | None:
    """The CUDA array interface of `value` (a dict), or None if it is no device array."""
    if _is_torch_bfloat16_on_device(value):
        bfloat16()  # registers the name "bfloat16" with numpy
        itemsize = 2
        return {
            "shape": tuple(int(s) for s in value.shape),
            "typestr": "bfloat16",
            "data": (int(value.data_ptr()), False),
            "strides": tuple(int(s) * itemsize for s in value.stride()),
            "version": 3,
        }
    interface = getattr(value, "__cuda_array_interface__", None)
    return interface if isinstance(interface, dict) else None


def _is_torch_bfloat16_on_device(value: Any) -> bool:
    module = type(value).__module__ or ""
    if not module.startswith("torch"):
        return False
    return str(getattr(value, "dtype", "")) == "torch.bfloat16" and bool(
        getattr(value, "is_cuda", False)
    )
