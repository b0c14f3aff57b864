"""Chart geometry for the results pages: coordinates and labels, no markup.

The templates `_chart_lines.html` and `_chart_bars.html` draw these as inline SVG, so the
charts need no JavaScript, no network and no build step, and every label a person typed
(run and slice names) goes through the template's autoescaping like any other text.

Values are fractions in [0, 1] on the y axis (lines) or x axis (bars). Coordinates are SVG
user units; the templates set a viewBox, so the charts scale with the page.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

# Okabe-Ito, a palette readers with colour-blindness can tell apart; yellow is left out
# because it vanishes on white.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#6B7385", "#000000")


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


@dataclass(frozen=True)
class Tick:
    at: float  # position along its axis, in SVG units
    label: str

    @property
    def baseline(self) -> float:
        """Where a y-axis tick's text sits so that it is centred on the tick."""
        return round(self.at + 4, 2)


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class Line:
    label: str
    color: str
    points: str  # "x,y x,y ..." for <polyline>
    dots: tuple[Dot, ...]
    dashed: bool = False


@dataclass(frozen=True)
class Rule:
    """A reference line across the plot (a target, a cut-off, a version boundary)."""

    x1: float
    y1: float
    x2: float
    y2: float
    label: str
    label_x: float
    label_y: float
    title: str = ""
    kind: str = "target"  # css class: target, cutoff, boundary


@dataclass(frozen=True)
class Series:
    """What a caller hands in: a named line of (x, y, tooltip) points; y is a fraction."""

    label: str
    points: Sequence[tuple[float, float, str]]
    color: str
    dashed: bool = False
    dots: bool = False


@dataclass(frozen=True)
class LineChart:
    width: int
    height: int
    left: float
    top: float
    right: float
    bottom: float
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    lines: tuple[Line, ...]
    rules: tuple[Rule, ...]
    x_label: str
    y_label: str
    title: str

    @property
    def is_empty(self) -> bool:
        return not self.lines

    # Where the axis texts go, so the templates do no arithmetic.
    @property
    def y_tick_x(self) -> float:
        return self.left - 6

    @property
    def x_tick_y(self) -> float:
        return self.bottom + 15

    @property
    def x_label_x(self) -> float:
        return round((self.left + self.right) / 2, 2)

    @property
    def x_label_y(self) -> float:
        return self.height - 6

    @property
    def y_label_y(self) -> float:
        return round((self.top + self.bottom) / 2, 2)


_MARGIN = {"left": 46, "top": 22, "right": 16, "bottom": 40}


def _fraction_ticks(low: float, high: float, y_of) -> tuple[Tick, ...]:
    steps = [i / 10 for i in range(0, 11)]
    every = 0.1 if high - low <= 0.5 else 0.2
    return tuple(Tick(at=y_of(v), label=f"{v:.1f}") for v in steps if low - 1e-9 <= v <= high + 1e-9 and round(v / every, 6).is_integer())


def line_chart(
    series: Sequence[Series],
    *,
    x_min: float,
    x_max: float,
    x_ticks: Sequence[tuple[float, str]],
    x_label: str,
    y_label: str,
    title: str,
    y_rules: Sequence[tuple[float, str]] = (),
    x_rules: Sequence[tuple[float, str, str, str]] = (),
    width: int = 760,
    height: int = 340,
    y_ticks: Sequence[tuple[float, str]] | None = None,
) -> LineChart:
    """Lines of fractions against x.

    `y_rules` are (fraction, label) horizontal targets; `x_rules` are (x, label, tooltip,
    kind) vertical markers such as the k_final cut-off or a version boundary. `y_ticks`,
    (fraction, label) pairs, replace the 0.0 .. 1.0 ticks for a caller that plots counts
    scaled into [0, 1] (labeling's found-against-judged curve).
    """
    left, top = _MARGIN["left"], _MARGIN["top"]
    # Target labels sit right of the plot, where no line can run over them.
    right, bottom = width - (_MARGIN["right"] + 100 if y_rules else _MARGIN["right"]), height - _MARGIN["bottom"]
    span = (x_max - x_min) or 1.0

    def x_of(x: float) -> float:
        return round(left + (x - x_min) / span * (right - left), 2)

    def y_of(y: float) -> float:
        return round(bottom - min(max(y, 0.0), 1.0) * (bottom - top), 2)

    lines = []
    for one in series:
        coords = [(x_of(x), y_of(y), text) for x, y, text in one.points]
        if not coords:
            continue
        points = " ".join(f"{x},{y}" for x, y, _ in coords)
        dots = tuple(Dot(x, y, text) for x, y, text in coords) if one.dots else ()
        lines.append(Line(label=one.label, color=one.color, points=points, dots=dots, dashed=one.dashed))

    rules = [
        Rule(
            x1=left,
            y1=y_of(value),
            x2=right,
            y2=y_of(value),
            label=label,
            label_x=right + 4,
            label_y=y_of(value) + 4,
            title=label,
            kind="target",
        )
        for value, label in y_rules
    ]
    rules += [
        Rule(x1=x_of(x), y1=top, x2=x_of(x), y2=bottom, label=label, label_x=x_of(x) + 4, label_y=top + 10, title=tooltip, kind=kind)
        for x, label, tooltip, kind in x_rules
    ]
    return LineChart(
        width=width,
        height=height,
        left=left,
        top=top,
        right=right,
        bottom=bottom,
        x_ticks=tuple(Tick(at=x_of(x), label=label) for x, label in x_ticks),
        y_ticks=(_fraction_ticks(0.0, 1.0, y_of) if y_ticks is None else tuple(Tick(at=y_of(y), label=label) for y, label in y_ticks)),
        lines=tuple(lines),
        rules=tuple(rules),
        x_label=x_label,
        y_label=y_label,
        title=title,
    )


def k_ticks(k_max: int, *, count: int = 6) -> list[tuple[float, str]]:
    """Round cut-offs from 1 to k_max for a recall curve's x axis."""
    if k_max <= 1:
        return [(1, "1")]
    raw = k_max / (count - 1)
    step = next(s for s in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10_000) if s >= raw)
    # A step of 1 starts its range at 1 too: the tick at 1 is drawn once.
    ticks = [1] + [k for k in range(step, k_max + 1, step) if k > 1]
    if ticks[-1] != k_max and k_max - ticks[-1] > step / 3:
        ticks.append(k_max)
    return [(k, str(k)) for k in ticks]


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    color: str
    title: str
    under: bool  # under the target line
    value_text: str

    @property
    def text_x(self) -> float:
        return round(self.x + self.width + 3, 2)

    @property
    def text_y(self) -> float:
        return round(self.y + self.height - 2, 2)


@dataclass(frozen=True)
class BarRow:
    label: str
    y: float  # where the row's label sits
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class BarChart:
    width: int
    height: int
    left: float
    top: float
    right: float
    bottom: float
    rows: tuple[BarRow, ...]
    x_ticks: tuple[Tick, ...]
    target: Rule | None
    title: str
    x_label: str

    @property
    def is_empty(self) -> bool:
        return not self.rows

    @property
    def label_x(self) -> float:
        return self.left - 8

    @property
    def x_tick_y(self) -> float:
        return self.bottom + 14

    @property
    def x_label_x(self) -> float:
        return round((self.left + self.right) / 2, 2)

    @property
    def x_label_y(self) -> float:
        return self.height - 4


@dataclass(frozen=True)
class BarGroup:
    """One row of bars: a label and one (value or None, colour, tooltip) per series."""

    label: str
    bars: Sequence[tuple[float | None, str, str]] = field(default_factory=tuple)


def bar_chart(
    groups: Sequence[BarGroup],
    *,
    target: float | None,
    target_label: str,
    title: str,
    x_label: str,
    width: int = 760,
    bar_height: int = 9,
    label_width: int = 190,
) -> BarChart:
    """Horizontal bars of fractions, grouped by row, with an optional vertical target line."""
    left, top, right = label_width, 16, width - 36
    series_count = max((len(group.bars) for group in groups), default=1) or 1
    row_height = series_count * (bar_height + 2) + 10
    bottom = top + row_height * len(groups)
    height = int(bottom + 34)

    def x_of(value: float) -> float:
        return round(left + min(max(value, 0.0), 1.0) * (right - left), 2)

    rows = []
    for i, group in enumerate(groups):
        row_top = top + i * row_height + 5
        bars = []
        for j, (value, bar_color, text) in enumerate(group.bars):
            if value is None:
                continue
            bars.append(
                Bar(
                    x=left,
                    y=row_top + j * (bar_height + 2),
                    width=round(x_of(value) - left, 2),
                    height=bar_height,
                    color=bar_color,
                    title=text,
                    under=target is not None and value < target,
                    value_text=f"{value:.2f}",
                )
            )
        rows.append(BarRow(label=group.label, y=round(row_top + (row_height - 10) / 2 + 4, 2), bars=tuple(bars)))

    rule = None
    if target is not None:
        rule = Rule(
            x1=x_of(target),
            y1=top,
            x2=x_of(target),
            y2=bottom,
            label=target_label,
            label_x=x_of(target) + 4,
            label_y=top - 3,
            title=target_label,
            kind="target",
        )
    ticks = tuple(Tick(at=x_of(v / 10), label=f"{v / 10:.1f}") for v in range(0, 11, 2))
    return BarChart(
        width=width,
        height=height,
        left=left,
        top=top,
        right=right,
        bottom=bottom,
        rows=tuple(rows),
        x_ticks=ticks,
        target=rule,
        title=title,
        x_label=x_label,
    )
