"""rayaccel reference plugin for Google Cloud TPU: chips from /dev, slice facts from GKE env or GCE metadata."""

__version__ = "0.1.0"
