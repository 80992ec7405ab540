"""Plugin hooks out of process: worker processes, what parent and worker say, and the pool that runs them."""
