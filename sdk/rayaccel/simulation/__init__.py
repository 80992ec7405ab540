"""The edge's choice of host: the real machine, or a named plugin's fixture (``nvidia/dgx-h100``) with faults
applied, looked up through the plugin manager. The CLI, the Ray driver and node, the isolation workers and the
testing kit call it; the inventory never does (it takes the Host it is given). The hosts themselves live in
:mod:`rayaccel.hosts`."""
