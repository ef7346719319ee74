"""The queues page's throughput chart, drawn on the server: a queue's last hour as sixty bars, one a
minute, the completed runs stacked under the failed ones, as geometry for an inline SVG (no script,
no image request, nothing the page's Content-Security-Policy has to allow)."""

from __future__ import annotations

from dataclasses import dataclass

WIDTH = 180
HEIGHT = 36
#: Each minute's slot; a bar leaves a pixel of it empty so neighbours stay apart.
SLOT = WIDTH / 60


@dataclass(frozen=True)
class Bar:
    """One minute: where its completed part and its failed part sit (heights 0 when none)."""

    x: float
    width: float
    completed_y: float
    completed_h: float
    failed_y: float
    failed_h: float
    minutes_ago: int
    completed: int
    failed: int


@dataclass(frozen=True)
class Chart:
    bars: list[Bar]
    peak: int
    width: int = WIDTH
    height: int = HEIGHT


def throughput_chart(minutes: tuple[tuple[int, int], ...]) -> Chart:
    """The bars of ``minutes`` ((completed, failed) per minute, oldest first), scaled so the busiest
    minute fills the chart; a minute with any run is at least a pixel tall, so it shows."""
    peak = max((c + f for c, f in minutes), default=0)
    scale = (HEIGHT - 1) / peak if peak else 0.0
    bars = []
    for i, (completed, failed) in enumerate(minutes):
        done_h = max(1.0, completed * scale) if completed else 0.0
        bad_h = max(1.0, failed * scale) if failed else 0.0
        bars.append(
            Bar(
                x=round(i * SLOT, 2), width=round(SLOT - 0.6, 2),
                completed_y=round(HEIGHT - done_h, 2), completed_h=round(done_h, 2),
                failed_y=round(HEIGHT - done_h - bad_h, 2), failed_h=round(bad_h, 2),
                minutes_ago=len(minutes) - 1 - i, completed=completed, failed=failed,
            )
        )  # fmt: skip
    return Chart(bars, peak)
