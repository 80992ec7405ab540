"""``python -m rayaccel`` is the ``rayaccel`` command."""

import sys

from rayaccel.cli import main

sys.exit(main())
