"""How many CPUs XLA:CPU may use: the process's affinity, narrowed on request before JAX starts."""

import os

from .errors import BridgeError


def allowed_cpus() -> int:
    """The CPUs this process may run on (XLA:CPU sizes its thread pools from this)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def limit_cpus(n: int) -> None:
    """Keep the first `n` of the allowed CPUs. Must run before XLA's CPU client exists."""
    if n < 1:
        raise BridgeError(f"--threads must be at least 1, not {n}")
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError) as e:
        raise BridgeError(f"--threads: cannot read this process's CPU affinity: {e}") from None
    if n > len(allowed):
        raise BridgeError(f"--threads {n}: this process may run on only {len(allowed)} CPUs")
    os.sched_setaffinity(0, allowed[:n])
