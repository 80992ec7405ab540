"""Tensor transports the SDK owns: the reference shared-memory transport every plugin may register, and the
metrics every registered transport reports (``ray_rayaccel_transport_*``). Registering them with Ray is
:mod:`rayaccel.ray.transports`."""
