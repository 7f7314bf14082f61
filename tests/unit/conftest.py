import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

# The compile cache is off in the tests (many patch the compiler, which its key cannot see) but
# in test_compile_cache.py, which turns it on; its folder is theirs, not the user's.
_CACHE = tempfile.mkdtemp(prefix="loopopt-test-cache-")
os.environ["LOOPOPT_CACHE_DIR"] = _CACHE
os.environ["LOOPOPT_CACHE"] = "0"
atexit.register(shutil.rmtree, _CACHE, True)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


# Property-test profiles: `ci` (default) and `thorough` (--hypothesis-profile=thorough).
_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile("ci", max_examples=300, deadline=None, suppress_health_check=_SLOW_OK)
settings.register_profile(
    "thorough", max_examples=10_000, deadline=None, suppress_health_check=_SLOW_OK
)
settings.load_profile("ci")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `gpu` are skipped unless a CUDA device is usable; the reason says what is
    missing (cuda-python, the driver, a device: `cuda.unavailable_reason`)."""
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    from loopopt.runtime import cuda

    reason = cuda.unavailable_reason()
    if reason is not None:
        skip = pytest.mark.skip(reason=f"no usable GPU: {reason}")
        for item in gpu_items:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_undefined_shuffles() -> Iterator[None]:
    """A test fails when the GPU emulator ran a shuffle whose result PTX leaves undefined
    (gpu_shuffle_emulator.py); tests that expect one take the errors first."""
    yield
    emulator = sys.modules.get("gpu_shuffle_emulator")
    if emulator is not None and emulator.ERRORS:
        errors = emulator.take_errors()
        pytest.fail(f"undefined warp shuffles in the emulator: {sorted(set(errors))}")
