"""rayaccel reference plugin for AWS Neuron: devices from neuron-ls, health from the driver's sysfs."""

__version__ = "0.1.0"
