"""hostile-spawn: ACME devices, and discovery that does what rayaccel_testplugins.hostile._spawn does."""

from rayaccel_testplugins.hostile import make

make(globals(), "spawn")
