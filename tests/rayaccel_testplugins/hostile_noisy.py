"""hostile-noisy: ACME devices, and discovery that does what rayaccel_testplugins.hostile._noisy does."""

from rayaccel_testplugins.hostile import make

make(globals(), "noisy")
