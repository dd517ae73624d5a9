"""Regenerates the real XLA dumps in this folder: three jitted functions (an attention block, an
MLP, a loss) at small sizes, dumped by XLA:CPU with `--xla_dump_to`, exactly as this jax writes
them. The HLO parser's tests read every *_optimizations.txt here (src/hlo/dump_test.cc).

    python3 src/hlo/testdata/jax_dumps/generate.py        # from anywhere; rewrites this folder

For each function NAME it keeps the jit_NAME module's files: NAME.before_optimizations.txt,
NAME.cpu_after_optimizations.txt. Then it calls the MLP once more on concrete arrays made with
jnp.ones/jnp.zeros, as a user script would, and keeps that whole dump folder as mlp_dump/: the
helper modules JAX jits for the inputs (jit_broadcast_in_dim, ...) and the other files of a dump
(buffer assignment, live range, memory report, debug_options, LLVM IR, object files), so that
`maxkernel import DIR` and the refusal of non-HLO files are tested on a real folder. Left out
of mlp_dump/ to keep the repository small: the optimized LLVM IR (*.ir-with-opt.ll, tens of KB
each) and the per-module subfolders (module.mlir, *.textproto).
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# Runs in a child process: XLA reads XLA_FLAGS once, when the backend starts.
CHILD = r'''
import jax
import jax.numpy as jnp

def attention(x, wq, wk, wv, wo):
    q, k, v = x @ wq, x @ wk, x @ wv
    s = (q @ k.T) / jnp.sqrt(jnp.float32(q.shape[-1]))
    return (jax.nn.softmax(s, axis=-1) @ v) @ wo + x

def mlp(x, w1, b1, w2, b2):
    return jax.nn.gelu(x @ w1 + b1) @ w2 + b2

def loss(logits, labels):
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=-1))

key = jax.random.PRNGKey(0)
f32 = jnp.float32
sd = lambda *s: jax.ShapeDtypeStruct(s, f32)
jax.jit(attention).lower(sd(16, 32), sd(32, 32), sd(32, 32), sd(32, 32), sd(32, 32)).compile()
jax.jit(mlp).lower(sd(8, 32), sd(32, 64), sd(64), sd(64, 32), sd(32)).compile()
jax.jit(loss).lower(sd(8, 10), jax.ShapeDtypeStruct((8,), jnp.int32)).compile()
'''

# The MLP on concrete arrays: JAX also jits (and dumps) the helpers that make them.
CHILD_FOLDER = CHILD.split("key = ")[0] + r'''
y = jax.jit(mlp)(jnp.ones((8, 32)), jnp.ones((32, 64)), jnp.zeros(64), jnp.ones((64, 32)),
                 jnp.zeros(32))
jax.block_until_ready(y)
'''

FUNCTIONS = ("attention", "mlp", "loss")


def dump_of(code: str, dump: str) -> None:
    env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={dump}", JAX_PLATFORMS="cpu",
               TF_CPP_MIN_LOG_LEVEL="2")
    subprocess.run([sys.executable, "-c", code], check=True, env=env,
                   cwd=os.path.dirname(dump))


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "dump")
        dump_of(CHILD, dump)
        for name in FUNCTIONS:
            for kind in ("before_optimizations", "cpu_after_optimizations"):
                found = glob.glob(os.path.join(dump, f"module_*.jit_{name}.{kind}.txt"))
                if len(found) != 1:
                    print(f"expected one jit_{name} {kind} file, found {found}", file=sys.stderr)
                    return 1
                shutil.copyfile(found[0], os.path.join(HERE, f"{name}.{kind}.txt"))
        folder_dump = os.path.join(tmp, "folder")
        dump_of(CHILD_FOLDER, folder_dump)
        folder = os.path.join(HERE, "mlp_dump")
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        for path in glob.glob(os.path.join(folder_dump, "*")):
            if os.path.isfile(path) and not path.endswith(".ir-with-opt.ll"):
                shutil.copyfile(path, os.path.join(folder, os.path.basename(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
