"""The main job on simulated hardware, run by ``make demo`` (``python -m demo``): a development tool, not part of
the rayaccel distribution."""
