"""hostile-exit: ACME devices, and discovery that does what rayaccel_testplugins.hostile._exit does."""

from rayaccel_testplugins.hostile import make

make(globals(), "exit")
