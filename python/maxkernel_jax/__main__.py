import sys

from maxkernel_jax.cli import main

sys.exit(main())
