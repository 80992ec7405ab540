"""hostile-flood: discovery that answers 100,000 devices (ACME's first device, copied)."""

from rayaccel_testplugins.hostile import make

make(globals(), "flood")
