"""hostile-stdout: ACME devices, and discovery that does what rayaccel_testplugins.hostile._hold_stdout does."""

from rayaccel_testplugins.hostile import make

make(globals(), "stdout")
