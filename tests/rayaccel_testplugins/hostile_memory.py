"""hostile-memory: ACME devices, and discovery that does what rayaccel_testplugins.hostile._memory does."""

from rayaccel_testplugins.hostile import make

make(globals(), "memory")
