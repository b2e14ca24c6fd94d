"""The one compiled part: an optional accelerator for the OTLP wire format (collector/sources/_wire.c): it decodes
protobuf spans and encodes toolscore's evaluation log records.

Everything else is in pyproject.toml. `optional=True`: where no C compiler or Python headers are found, the
install goes on without it and the pure-Python path (the one tested everywhere) does both.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "toolscore.collector.sources._wire",
            ["collector/sources/_wire.c"],
            optional=True,
            extra_compile_args=["-O2"],
        )
    ]
)
