"""hostile-patch: ACME devices, and discovery that does what rayaccel_testplugins.hostile._patch_sdk does."""

from rayaccel_testplugins.hostile import make

make(globals(), "patch")
