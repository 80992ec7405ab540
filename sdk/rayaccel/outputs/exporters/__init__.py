"""rayaccel export's formats: each a pure function of the node inventory (docs/exporters.md)."""
