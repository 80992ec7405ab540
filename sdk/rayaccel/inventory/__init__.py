"""A node's inventory: the one builder (host -> plugins -> validated records -> NodeInventory) and the pure
functions over it (topology, visible units, transport paths, request quantities, the operator's health policy
and the fatal health findings the monitor cordons by)."""
