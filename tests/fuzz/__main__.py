"""`python -m tests.fuzz [--seconds N] [NAME...]`: fuzz each target (all when none) for N seconds with atheris.

Each target runs in its own process, on a corpus seeded with a copy of its tests/testdata files (libFuzzer
writes the inputs it finds into the corpus, and tests/testdata stays as it is). A finding stops that target
with libFuzzer's report and the crashing input written as `crash-*` in the working directory; the exit
status is 1 when any target found something.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.fuzz.targets import TARGETS


def _one(name: str, argv: list[str]) -> None:
    """The child's side: instrument toolscore, then hand the target to atheris with libFuzzer's flags."""
    import atheris

    with atheris.instrument_imports(include=["toolscore"]):
        import toolscore.collector.registry
        import toolscore.collector.serve._encode
        import toolscore.collector.serve.receivers._otlp_export
        import toolscore.collector.serve.receivers._otlp_json_request
        import toolscore.collector.sources.otlp_json
        import toolscore.scorers._json_equality
        import toolscore.scorers._trajectory_evalite  # noqa: F401
    atheris.Setup([sys.argv[0], *argv], TARGETS[name].run)
    atheris.Fuzz()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        _one(argv[1], argv[2:])
        return 0
    seconds = 60
    if argv[:1] == ["--seconds"]:
        seconds, argv = int(argv[1]), argv[2:]
    unknown = [name for name in argv if name not in TARGETS]
    if unknown:
        print(f"unknown fuzz target {unknown[0]!r}; known: {', '.join(TARGETS)}", file=sys.stderr)
        return 2
    failed = []
    for name in argv or list(TARGETS):
        with tempfile.TemporaryDirectory(prefix=f"toolscore-fuzz-{name}-") as corpus:
            seeds = TARGETS[name].seeds()
            for i, seed in enumerate(seeds):
                shutil.copyfile(seed, Path(corpus) / f"{i:04d}-{seed.name}")
            print(f"== {name}: {len(seeds)} seeds, {seconds} s", flush=True)
            flags = [f"-max_total_time={seconds}", "-rss_limit_mb=4096", "-timeout=10", corpus]
            done = subprocess.run([sys.executable, "-m", "tests.fuzz", "--one", name, *flags], check=False)
            if done.returncode != 0:
                failed.append(name)
    if failed:
        print(f"fuzzing found something in: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
