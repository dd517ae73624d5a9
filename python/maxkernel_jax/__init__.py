"""maxkernel's JAX bridge.

Turns a JAX function (a suite workload or a user's reference file) into a maxkernel task
directory (task.yaml + module.hlo + data/*.npy), regenerates a task's inputs exactly as the C++
side does, computes XLA:CPU's outputs and times XLA:CPU as the baseline. Schema: docs/TASKS.md.
"""

__version__ = "0.1.0"
