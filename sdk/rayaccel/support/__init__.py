"""Leaf helpers every layer may use and none is about accelerators: bounded waits and threads, polling with a
deadline, process liveness, deferred imports, optional extras, which Ray is installed, text made safe for a
terminal, and the monitor's polling interval. They import nothing of rayaccel but its errors."""
