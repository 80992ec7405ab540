"""hostile-hang: ACME devices, and discovery that does what rayaccel_testplugins.hostile._hang does."""

from rayaccel_testplugins.hostile import make

make(globals(), "hang")
