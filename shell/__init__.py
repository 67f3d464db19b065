"""The bash executor: bounded capture, overflow into artifacts, legacy spill files."""
