"""Fuzz targets for the readers that take untrusted bytes, run with atheris by `make fuzz` (not `make test`)."""
