"""rayaccel plugin for the {{ cookiecutter.__family }} accelerator family (see README.md)."""

__version__ = "0.1.0"
