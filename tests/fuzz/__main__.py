"""`python -m tests.fuzz --count N --seed S [--jobs J] [--out DIR]`: see run.py."""

import sys

from .run import main

sys.exit(main())
