"""The compiled parts, all optional accelerators: the OTLP wire format (collector/sources/_wire.c), which decodes
protobuf spans and encodes toolscore's evaluation log records, the span processor's pass-through for plain
spans (collector/pipeline/_gate.c), and the scorers' JSON equality (scorers/_equal.c).

Everything else is in pyproject.toml. `optional=True`: where no C compiler or Python headers are found, the
install goes on without them and the pure-Python paths (the ones tested everywhere) do their work.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "toolscore.collector.sources._wire",
            ["collector/sources/_wire.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "toolscore.collector.pipeline._gate",
            ["collector/pipeline/_gate.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "toolscore.scorers._equal",
            ["scorers/_equal.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
    ]
)
