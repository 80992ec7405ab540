"""rayaccel plugin for NVIDIA GPUs, probed through NVML (``nvidia-ml-py``)."""

__version__ = "0.1.0"
