"""A real local Ray runtime for a test module: ``pytestmark = pytest.mark.usefixtures(...)``.

With ``RAY_ADDRESS`` set (e.g. two nodes started on loopback with ``ray start``), the module
runs on that cluster instead.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

LOOPBACK_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
"""A loopback test cluster only: no usage reports, no token authentication."""


@pytest.fixture(scope="module")
def ray_runtime() -> Iterator[Any]:
    """A new local runtime, ``ray.init(num_cpus=2, include_dashboard=False)``, for the module
    (or the cluster at ``RAY_ADDRESS``), shut down after it."""
    ray = pytest.importorskip("ray")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in LOOPBACK_ENV.items():
            patch.setenv(name, value)
        if os.environ.get("RAY_ADDRESS"):
            ray.init()
        else:
            ray.init(address="local", num_cpus=2, include_dashboard=False)
        try:
            yield ray
        finally:
            ray.shutdown()


def assert_killed(actor: Any) -> None:
    """The actor dies. ``ray.kill`` is asynchronous: a call made just after ``close()`` may
    still be answered, one made once the kill lands raises ``RayActorError`` (a 600 s hang
    guard, polled)."""
    import ray

    for _ in range(6000):
        try:
            ray.get(actor.describe.remote())
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.1)
    raise AssertionError("the actor still answers 600 s after close()")
