"""`toolscore expectations from-run`: a scored run, read from the score store, made an expectation.

The same document the page's "make this run an expectation" writes (`toolscore.collector.ui.expectation_from_run`):
`match` on the run's agent (and its request, unless `--no-match-input`, and each `--match-attribute KEY`: the run
span's attribute, else its resource's, as the score store kept it), one `trajectory` scorer expecting the run's
calls. Printed as YAML by default, written to `--write FILE`, or applied to the registry (`--apply`, to `--db` or
`--server` as `expectations apply`). Exit status 1 when the store has no such run (or several runs of
the trace and no RUN_SPAN_ID to choose).
"""

from __future__ import annotations

import click

from toolscore.collector.cli.expectations import _backend, _Target, _target_options, expectations_group
from toolscore.collector.cli.runs import DEFAULT_DB as DEFAULT_SCORES
from toolscore.collector.ui._from_run import ARGS_MODES, MODES

__all__ = ["from_run_command"]


@expectations_group.command("from-run")
@click.argument("trace_id")
@click.argument("run_span_id", required=False)
@click.option("--scores", default=DEFAULT_SCORES, show_default=True, help="The score store the run is read from.")
@click.option("--name", help="The expectation's name. Default: from-run.<agent>.<trace id's first 8>.")
@click.option("--mode", type=click.Choice(MODES), default="strict", show_default=True, help="trajectory mode.")
@click.option(
    "--args-mode", type=click.Choice(ARGS_MODES), default="subset", show_default=True, help="How arguments compare."
)
@click.option("--no-match-input", is_flag=True, help="Select runs by the agent alone, not also by the request.")
@click.option(
    "--match-attribute",
    "match_attributes",
    multiple=True,
    metavar="KEY",
    help="Also select runs whose attribute KEY equals this run's (run span attribute, else resource attribute, "
    "e.g. service.name); repeatable.",
)
@click.option("--write", "write_path", type=click.Path(dir_okay=False), help="Write the YAML to this file.")
@click.option("--apply", "apply_it", is_flag=True, help="Write the expectation to the registry (--db / --server).")
@_target_options
def from_run_command(  # noqa: PLR0917  (click passes every option as a parameter)
    trace_id: str,
    run_span_id: str | None,
    scores: str,
    name: str | None,
    mode: str,
    args_mode: str,
    no_match_input: bool,
    match_attributes: tuple[str, ...],
    write_path: str | None,
    apply_it: bool,
    target: _Target,
) -> None:
    """Make the run TRACE_ID [RUN_SPAN_ID] (from `toolscore runs`) an expectation: print, --write or --apply it."""
    from toolscore.collector.registry import InvalidExpectation
    from toolscore.collector.serve.scores import run_by_span
    from toolscore.collector.ui._from_run import expectation_from_run

    if write_path and apply_it:
        raise click.UsageError("--write and --apply: choose one")
    try:
        runs = run_by_span(scores, trace_id, run_span_id)
    except FileNotFoundError:
        raise click.ClickException(f"no score store at {scores} (see --scores)") from None
    if not runs:
        raise click.ClickException(
            f"no run of trace {trace_id} in {scores}" + (f" with span {run_span_id}" if run_span_id else "")
        )
    spans = {(run.span_id) for run in runs}
    if len(spans) > 1:
        listed = ", ".join(f"{run.span_id} ({run.agent or '-'})" for run in runs)
        raise click.ClickException(f"trace {trace_id} has {len(spans)} runs: give RUN_SPAN_ID, one of {listed}")
    try:
        built = expectation_from_run(
            runs[0],
            name=name,
            mode=mode,
            args_mode=args_mode,
            match_input=not no_match_input,
            match_attributes=match_attributes,
        )
    except (ValueError, InvalidExpectation) as exc:
        raise click.ClickException(str(exc)) from None
    for note in built.notes:
        click.echo(f"note: {note}", err=True)
    if write_path:
        with open(write_path, "w", encoding="utf-8") as out:
            out.write(built.yaml)
        click.echo(f"wrote {built.expectation.name} to {write_path}", err=True)
    elif apply_it:
        with _backend(target, create=True) as backend:
            for written, action in backend.apply([built.expectation]):
                click.echo(f"{written} {action}")
    else:
        click.echo(built.yaml, nl=False)
