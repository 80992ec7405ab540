"""weird: one device whose product name is Rich markup, emoji codes and a link, to prove the CLI prints vendor
strings as data (tests/support/test_bounds.py); importable, so it runs in a plugin worker like any installed plugin."""

from __future__ import annotations

from rayaccel_testplugins.one_device import one_device_plugin

WEIRD = "Weird [/] [link=https://example.com]click[/link] 0000:ab:00.0 :smile: [bold]x"
one_device_plugin(globals(), "weird", resource="WEIRD", device_id="w0", product_name=WEIRD)
