"""`python -m hyperpod_perf.cli`: the same entry point as the `hyperpod-perf` console script."""

import sys

from hyperpod_perf.cli import main

sys.exit(main())
