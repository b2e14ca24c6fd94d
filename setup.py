"""The one compiled part: an optional accelerator for decoding OTLP protobuf spans (collector/sources/_wire.c).

Everything else is in pyproject.toml. `optional=True`: where no C compiler or Python headers are found, the
install goes on without it and the pure-Python path (the one tested everywhere) decodes the spans.
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
