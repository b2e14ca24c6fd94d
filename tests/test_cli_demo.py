"""`toolscore demo`'s table: which expectation each score row belongs to is never left to guess."""

from __future__ import annotations

from rich.console import Console

from toolscore.collector.cli.demo import DemoScore, scores_table


def _rows(scores: list[DemoScore]) -> list[list[str]]:
    console = Console(record=True, width=200, color_system=None)
    console.print(scores_table(scores))
    lines = console.export_text().splitlines()
    cells = [[cell.strip() for cell in line.strip("│").split("│")] for line in lines if line.startswith("│")]
    return [row for row in cells if row[2]]  # score rows: the agent's line under a run has no scorer


def test_a_run_scored_by_two_expectations_names_each_on_its_first_row() -> None:
    run, agent = "right: two cities", "demo-weather-agent"
    scores = [
        DemoScore(run, agent, "demo.weather.two-cities", "trajectory", 1.0, "pass", "all paired"),
        DemoScore(run, agent, "demo.weather.two-cities", "f1", 1.0, "pass", "F1=1"),
        DemoScore(run, agent, "extra.weather", "tool_selection", 1.0, "pass", "among the calls"),
        DemoScore("wrong: forgot Tokyo", agent, "demo.weather.two-cities", "f1", 0.667, "fail", "F1=0.667"),
    ]
    assert [(row[0], row[1], row[2]) for row in _rows(scores)] == [
        ("right: two cities", "demo.weather.two-cities", "trajectory"),
        ("", "", "f1"),
        ("", "extra.weather", "tool_selection"),
        ("wrong: forgot Tokyo", "demo.weather.two-cities", "f1"),
    ]
