"""Regenerate the shipped JSON Schemas: python -m rayaccel.schemas."""

from rayaccel.schemas import write_all

for written_path in write_all():
    print(written_path)
