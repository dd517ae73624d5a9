"""Which libtpu wheel this machine needs: the version the installed jax's `tpu` extra pins.

libtpu is only ever used compile-only here (no TPU is attached): it is XLA:TPU and Mosaic, the
real compilers, which `jax.experimental.topologies.get_topology_desc` hands compile-only devices
from. A libtpu that does not match jax fails in obscure ways, so the pin is read from jax's own
metadata rather than written down here.

Run as a script by scripts/setup.sh (maxkernel_jax need not be installed yet):
    python3 python/maxkernel_jax/tpu_setup.py --requirement   # prints "libtpu==0.0.42.*"
    python3 python/maxkernel_jax/tpu_setup.py --check         # exit 0: a matching libtpu imports
"""

import importlib.metadata
import importlib.util
import re
import sys

_EXTRA = re.compile(r"""extra\s*==\s*["']tpu["']""")


def libtpu_requirement(jax_requires=None):
    """The libtpu requirement of jax's `tpu` extra ("libtpu==0.0.42.*"), or None when jax is not
    installed or its metadata names none. `jax_requires` replaces importlib's list (tests)."""
    if jax_requires is None:
        try:
            jax_requires = importlib.metadata.requires("jax") or []
        except importlib.metadata.PackageNotFoundError:
            return None
    for line in jax_requires:
        spec, _, marker = line.partition(";")
        spec = spec.strip()
        if _EXTRA.search(marker) and re.match(r"libtpu(?![\w.-])", spec):
            return spec.replace(" ", "")
    return None


def installed_libtpu_version():
    """The installed libtpu distribution's version, or None."""
    try:
        return importlib.metadata.version("libtpu")
    except importlib.metadata.PackageNotFoundError:
        return None


def _release(v):
    """'0.0.42' -> (0, 0, 42); a pre/dev/local suffix ends the numeric part."""
    parts = []
    for piece in v.split("."):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group()))
        if m.end() != len(piece):
            break
    return tuple(parts)


def version_matches(requirement, version):
    """Whether `version` satisfies `requirement` ("libtpu==0.0.42.*", "libtpu>=0.0.40,<0.1").
    Uses `packaging` where it is installed; without it, == / ==X.* / >= / < / <= / > on release
    numbers (the forms jax's metadata uses)."""
    spec = re.sub(r"^libtpu", "", requirement.replace(" ", ""))
    if not spec:
        return True
    try:
        from packaging.specifiers import SpecifierSet

        return SpecifierSet(spec).contains(version, prereleases=True)
    except ImportError:
        pass
    have = _release(version)
    for clause in spec.split(","):
        m = re.fullmatch(r"(==|>=|<=|>|<|!=|~=)([\w.*+!-]+)", clause)
        if not m:
            return False
        op, want = m.groups()
        if op == "==" and want.endswith(".*"):
            prefix = _release(want[:-2])
            if have[:len(prefix)] != prefix:
                return False
            continue
        w = _release(want)
        n = max(len(w), len(have))
        a, b = have + (0,) * (n - len(have)), w + (0,) * (n - len(w))
        ok = {"==": a == b, "!=": a != b, ">=": a >= b, "<=": a <= b, ">": a > b, "<": a < b,
              "~=": a >= b and a[:len(w) - 1] == b[:len(w) - 1]}[op]
        if not ok:
            return False
    return True


def libtpu_status():
    """(ok, message): ok when libtpu imports at the version jax pins."""
    req = libtpu_requirement()
    if req is None:
        return False, "jax is not installed or its metadata has no `tpu` extra naming libtpu"
    have = installed_libtpu_version()
    if have is None:
        return False, f"libtpu is not installed (jax wants {req})"
    if not version_matches(req, have):
        return False, f"libtpu {have} is installed but jax wants {req}"
    if importlib.util.find_spec("libtpu") is None:
        return False, f"libtpu {have} is installed but does not import"
    return True, f"libtpu {have} matches jax's {req}"


def main(argv):
    if argv == ["--requirement"]:
        req = libtpu_requirement()
        if req is None:
            print("error: jax is not installed or names no libtpu in its `tpu` extra",
                  file=sys.stderr)
            return 2
        print(req)
        return 0
    if argv == ["--check"]:
        ok, message = libtpu_status()
        print(message)
        return 0 if ok else 1
    print("usage: tpu_setup.py --requirement | --check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
