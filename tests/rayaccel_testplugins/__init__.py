"""Plugins defined for the SDK's own tests: a well-behaved day-zero family and deliberately broken ones."""
