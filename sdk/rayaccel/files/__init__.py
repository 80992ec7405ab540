"""Files rayaccel reads and writes: size- and depth-limited input, complete-or-nothing output."""
