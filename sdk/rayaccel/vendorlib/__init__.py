"""Adapters for vendor Python libraries, each with a real and a simulated implementation.

Plugins reach them through ``host.library(name)``; the real host imports the vendor library, the simulated
host answers from the fixture's ``libraries.<name>`` data with the same calls and the same errors.
"""
