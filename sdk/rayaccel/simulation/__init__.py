"""Simulated machines: fixtures (what a vendor interface answers), the hosts that answer from them, what a
fixture expects of the inventory, and recording a real machine into one."""
