"""A node's inventory: the one builder (host -> plugins -> validated records -> NodeInventory) and the pure
functions over it (topology, visible units, transport paths, request quantities)."""
