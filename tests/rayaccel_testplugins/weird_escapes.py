"""weird-escapes: one device whose product name and id carry terminal escapes, to prove the CLI prints vendor
strings escaped (tests/support/test_bounds.py); importable, so it runs in a plugin worker like any installed plugin."""

from __future__ import annotations

from rayaccel_testplugins.one_device import one_device_plugin

#: Clears the screen and turns the rest red on a terminal that is handed it raw.
ESCAPED = "\x1b[2J\x1b[31mWeird Escaper 9000\x1b[0m"
one_device_plugin(globals(), "weird-escapes", resource="WEIRD_ESC", device_id="w0\x1b[8m", product_name=ESCAPED)
