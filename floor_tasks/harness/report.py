"""Reports over run records: tier ladder, failure histograms, usage and cost, and routing.

The routing table finds, per tier, the *boundary of model necessity*: the cheapest model whose
pass rate is statistically equivalent (TOST, :func:`~floor_tasks.harness.stats.equivalence_test`)
to the best model's in that tier.

Every interval treats a task as one cluster (its variants and repeats are correlated runs), so it
is about the population of tasks, not only these tasks' runs (see :mod:`floor_tasks.harness.stats`).
"""

from __future__ import annotations

import math
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentworld_envs.atomic_write import write_text_atomic
from floor_tasks.harness.record import RunRecord
from floor_tasks.harness.stats import (
    METHOD,
    DiffCI,
    Equivalence,
    RateCI,
    equivalence_test,
    pass_rate_ci,
)
from floor_tasks.task import TIERS
from floor_tasks.verifier import FAILURE_CLASSES

__all__ = [
    "OVERALL",
    "UsageSummary",
    "Route",
    "Report",
    "by_model",
    "case_key",
    "build_report",
    "plot_ladder",
    "render_markdown",
    "render_ladder_text",
    "write_report",
]

OVERALL = "overall"
"""The ladder column that pools every tier."""
UNCLASSIFIED = "unclassified"
"""The failure-class bucket of failed runs whose verdict names no class."""

Prices = Mapping[str, Mapping[str, float]]
"""model -> ``{"price_in_per_mtok": ..., "price_out_per_mtok": ...}`` (USD per million)."""
CaseKey = tuple[str, str, int]
PLOT_HINT = 'pip install "agentworld[plot]"'


def by_model(records: Iterable[RunRecord]) -> dict[str, list[RunRecord]]:
    """Group records by their ``model`` slug, models sorted by name."""
    groups: dict[str, list[RunRecord]] = defaultdict(list)
    for record in records:
        groups[record.model].append(record)
    return dict(sorted(groups.items()))


def _tiers(records: Iterable[RunRecord]) -> list[str]:
    extra = sorted({r.tier for r in records} - set(TIERS))
    return [*TIERS, *extra]


def _columns(records: Sequence[RunRecord], tiers: Sequence[str]) -> dict[str, list[RunRecord]]:
    """Split one model's records by tier, plus the pooled :data:`OVERALL` column."""
    columns: dict[str, list[RunRecord]] = {tier: [] for tier in tiers}
    for record in records:
        columns[record.tier].append(record)
    columns[OVERALL] = list(records)
    return columns


def case_key(record: RunRecord) -> CaseKey:
    """The identity of a run across models: ``(task_id, variant, repeat)``."""
    return record.task_id, record.variant, record.repeat


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


@dataclass(frozen=True)
class UsageSummary:
    """Mean tokens, latency and cost per run of one model.

    Tokens and cost are means over the runs whose every model call reported its token counts
    (their record's :attr:`~floor_tasks.harness.record.Usage.known`): None (unknown)
    when there is none, never 0.
    """

    runs: int
    mean_input_tokens: float | None
    mean_output_tokens: float | None
    mean_total_tokens: float | None
    mean_latency_s: float
    mean_wall_s: float
    cost_per_run: float | None
    """Mean USD per run; None when the model has no prices or no run with known tokens."""
    runs_without_usage: int = 0
    """Runs with a model call that reported no token counts, left out of the token means."""

    @property
    def total_cost(self) -> float | None:
        """USD over all runs, each at the mean cost per run; None when that is None."""
        return None if self.cost_per_run is None else self.cost_per_run * self.runs


def _known_mean(values: Sequence[float]) -> float | None:
    """The mean of ``values``; None (unknown) when there are none."""
    return _mean(values) if values else None


def _usage(records: Sequence[RunRecord], prices: Mapping[str, float] | None) -> UsageSummary:
    known = [r.usage for r in records if r.usage.known]
    tokens_in = [u.input_tokens for u in known]
    tokens_out = [u.output_tokens for u in known]
    cost = None
    if prices and {"price_in_per_mtok", "price_out_per_mtok"} <= prices.keys():
        cost = _known_mean([
            (i * prices["price_in_per_mtok"] + o * prices["price_out_per_mtok"]) / 1e6
            for i, o in zip(tokens_in, tokens_out, strict=True)
        ])
    return UsageSummary(
        runs=len(records),
        mean_input_tokens=_known_mean(tokens_in),
        mean_output_tokens=_known_mean(tokens_out),
        mean_total_tokens=_known_mean([u.total_tokens for u in known]),
        mean_latency_s=_mean([r.latency_s for r in records]),
        mean_wall_s=_mean([r.wall_s for r in records]),
        cost_per_run=cost,
        runs_without_usage=len(records) - len(known),
    )


def _cost_basis(
    usage: Mapping[str, UsageSummary], params: Mapping[str, float] | None
) -> tuple[str, dict[str, float]]:
    """Pick the cheapness measure every model has: cost per run, else params_b, else tokens;
    a model whose tokens are unknown ranks last by tokens, never as the cheapest."""
    costs = {m: u.cost_per_run for m, u in usage.items()}
    if None not in costs.values():
        return "cost per run", costs
    if params and all(m in params for m in usage):
        return "params_b", {m: float(params[m]) for m in usage}
    unknown = [m for m, u in usage.items() if u.mean_total_tokens is None]
    basis = "mean total tokens" + (f"; unknown for {', '.join(unknown)}, ranked last"
                                   if unknown else "")
    return basis, {m: math.inf if u.mean_total_tokens is None else u.mean_total_tokens
                   for m, u in usage.items()}


@dataclass(frozen=True)
class Route:
    """One row of the routing table: where a tier can be served without losing pass rate."""

    tier: str
    best: str
    best_rate: RateCI
    chosen: str
    chosen_rate: RateCI
    diff: DiffCI
    """``rate(chosen) - rate(best)`` at the equivalence test's confidence."""
    equivalent: tuple[str, ...]
    """Every model equivalent to the best one (the best included), cheapest first."""


def _equivalence(
    a: Sequence[RunRecord], b: Sequence[RunRecord], margin: float
) -> Equivalence:
    """The equivalence test of two cells, tasks as clusters; paired case by case when both
    hold the same cases."""
    cases_a = {case_key(r): r.passed for r in a}
    cases_b = {case_key(r): r.passed for r in b}
    if len(cases_a) == len(a) and len(cases_b) == len(b) and cases_a.keys() == cases_b.keys():
        keys = sorted(cases_a)
        return equivalence_test([cases_a[k] for k in keys], [cases_b[k] for k in keys],
                                margin=margin, paired=True, clusters_a=[k[0] for k in keys])
    return equivalence_test([r.passed for r in a], [r.passed for r in b], margin=margin,
                            clusters_a=[r.task_id for r in a], clusters_b=[r.task_id for r in b])


def _route(
    tier: str,
    cells: Mapping[str, Sequence[RunRecord]],
    cost: Mapping[str, float],
    ladder: Mapping[str, Mapping[str, RateCI]],
    margin: float,
) -> Route:
    rate = {m: ladder[m][tier] for m in cells}
    best = min(cells, key=lambda m: (-rate[m].rate, cost[m], m))
    diffs: dict[str, DiffCI] = {}
    for model, records in cells.items():
        test = _equivalence(records, cells[best], margin)
        if model == best or test.equivalent:
            diffs[model] = test.diff
    equivalent = sorted(diffs, key=lambda m: (cost[m], -rate[m].rate, m))
    chosen = equivalent[0]
    return Route(tier, best, rate[best], chosen, rate[chosen], diffs[chosen], tuple(equivalent))


@dataclass(frozen=True)
class Report:
    """Everything a report shows, computed once from the records."""

    n_runs: int
    tiers: list[str]
    ladder: dict[str, dict[str, RateCI]]
    """model -> tier (or :data:`OVERALL`) -> pass rate with CI."""
    failure_classes: dict[str, Counter[str]]
    failure_labels: dict[str, Counter[str]]
    terminations: dict[str, Counter[str]]
    usage: dict[str, UsageSummary]
    cost_basis: str
    routes: list[Route]
    margin: float

    def markdown(self, image: str | None = None) -> str:
        """Render as Markdown; ``image`` is the ladder plot's path relative to the file."""
        sections = [
            "# AgentFloor report",
            f"{self.n_runs} runs, {len(self.ladder)} models.",
            self._ladder_md(),
            *([f"![Tier ladder]({image})"] if image else []),
            self._failures_md(),
            self._labels_md(),
            self._terminations_md(),
            self._usage_md(),
            self._routing_md(),
        ]
        return "\n\n".join(sections) + "\n"

    def _ladder_md(self) -> str:
        head = ["Model", *self.tiers, "Overall"]
        rows = [
            [m, *(str(cells[c]) for c in [*self.tiers, OVERALL])]
            for m, cells in self.ladder.items()
        ]
        return (
            f"## Tier ladder\n\nPass rate [95% {METHOD} interval] (passed/runs). The interval "
            "stays wide for few runs: 5/5 gives [57%, 100%].\n\n"
            + _table(head, rows) + self._clusters_md()
        )

    def _clusters_md(self) -> str:
        """What the intervals are about where a task ran more than once; nothing otherwise
        (each interval is then Wilson's over the runs)."""
        cells = [cell for cells in self.ladder.values() for cell in cells.values()]
        if all(cell.clusters == cell.n for cell in cells):
            return ""
        head = ["Model", *self.tiers, "Overall"]
        rows = [[m, *(_cluster_cell(cells[c]) for c in [*self.tiers, OVERALL])]
                for m, cells in self.ladder.items()]
        return (
            "\n\nA task's runs (its variants and repeats) are correlated, so each interval here "
            "and each difference in the routing table counts a task as one cluster: the interval "
            "is Wilson's over the effective runs (the runs over their design effect, estimated "
            "from the tasks' pass counts; Korn & Graubard 1998), which lie between the tasks "
            "and the runs, and are the tasks where every run passed or every run failed. Tasks / "
            "effective runs:\n\n" + _table(head, rows)
        )

    def _failures_md(self) -> str:
        head = ["Model", "Failures", *(f"{c} {name}" for c, name in FAILURE_CLASSES.items()),
                UNCLASSIFIED]
        rows = [
            [m, str(sum(h.values())), *(str(h[c]) for c in [*FAILURE_CLASSES, UNCLASSIFIED])]
            for m, h in self.failure_classes.items()
        ]
        return "## Failure classes\n\nFailed runs by class.\n\n" + _table(head, rows)

    def _labels_md(self) -> str:
        rows = [
            [m, label, str(count)]
            for m, hist in self.failure_labels.items()
            for label, count in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        body = _table(["Model", "Label", "Runs"], rows) if rows else "No failure labels."
        return "## Failure labels\n\n" + body

    def _terminations_md(self) -> str:
        kinds = sorted({k for hist in self.terminations.values() for k in hist})
        rows = [[m, *(str(h[k]) for k in kinds)] for m, h in self.terminations.items()]
        return (
            "## Terminations\n\nHow runs ended (a run a failed model call stopped has no record: "
            "it is in the corpus's `errors.jsonl`, and a resumed sweep reruns it).\n\n"
            + _table(["Model", *kinds], rows)
        )

    def _usage_md(self) -> str:
        head = ["Model", "Runs", "Input tok", "Output tok", "Total tok", "Latency s", "Wall s",
                "Cost/run", "Total cost"]
        rows = [
            [m, str(u.runs), _tokens(u.mean_input_tokens), _tokens(u.mean_output_tokens),
             _tokens(u.mean_total_tokens), f"{u.mean_latency_s:.2f}", f"{u.mean_wall_s:.2f}",
             _cost(u.cost_per_run, u), _cost(u.total_cost, u)]
            for m, u in self.usage.items()
        ]
        partial = [f"{m}: {u.runs_without_usage} of {u.runs}" for m, u in self.usage.items()
                   if u.runs_without_usage]
        note = ("\n\nRuns with a model call that reported no token counts are left out of the "
                f"token and cost means ({'; '.join(partial)}); with none left, they are "
                "unknown." if partial else "")
        return ("## Tokens, latency and cost\n\nMeans per run.\n\n" + _table(head, rows)
                + note)

    def _routing_md(self) -> str:
        head = ["Tier", "Best", "Best rate", "Route to", "Rate", "Δ vs best (90% CI)",
                "Equivalent to best"]
        rows = [
            [r.tier, r.best, str(r.best_rate), r.chosen, str(r.chosen_rate), str(r.diff),
             ", ".join(r.equivalent)]
            for r in self.routes
        ]
        return (
            "## Routing: boundary of model necessity\n\n"
            "Per tier, the cheapest model (by "
            f"{self.cost_basis}) whose pass rate is equivalent to the best model's: the 90% "
            "Newcombe score interval of the difference (paired by case where both models ran "
            f"the same cases) lies within ±{100 * self.margin:.0f} pp (TOST).\n\n"
            + _table(head, rows)
        )


def _cluster_cell(ci: RateCI) -> str:
    return f"{ci.clusters} / {ci.n_eff:.1f}" if ci.n else "n/a"


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.4f}"


def _tokens(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.0f}"


def _cost(value: float | None, usage: UsageSummary) -> str:
    """A cost cell: unknown where no run's tokens are known, n/a where there are no prices."""
    return "unknown" if usage.mean_total_tokens is None else _usd(value)


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def build_report(
    records: Sequence[RunRecord],
    prices: Prices | None = None,
    params: Mapping[str, float] | None = None,
    *,
    margin: float = 0.10,
) -> Report:
    """Compute every table of the report.

    Args:
        records: run records of one or more models.
        prices: per-model token prices; models without both prices have cost "n/a".
        params: per-model parameter counts in billions (``params_b``).
        margin: the equivalence margin of the routing table.

    Raises:
        ValueError: when there are no records.
    """
    if not records:
        raise ValueError("no run records to report on")
    tiers = _tiers(records)
    groups = by_model(records)
    columns = {m: _columns(rs, tiers) for m, rs in groups.items()}
    ladder = {
        m: {c: pass_rate_ci([r.passed for r in rs], clusters=[r.task_id for r in rs])
            for c, rs in cols.items()}
        for m, cols in columns.items()
    }
    usage = {m: _usage(rs, (prices or {}).get(m)) for m, rs in groups.items()}
    basis, cost = _cost_basis(usage, params)
    routes = []
    for column in [*tiers, OVERALL]:
        cells = {m: cols[column] for m, cols in columns.items() if cols[column]}
        if cells:
            routes.append(_route(column, cells, cost, ladder, margin))
    return Report(
        n_runs=len(records),
        tiers=tiers,
        ladder=ladder,
        failure_classes={
            m: Counter(r.verdict.failure_class or UNCLASSIFIED for r in rs if not r.passed)
            for m, rs in groups.items()
        },
        failure_labels={
            m: Counter(label for r in rs for label in r.verdict.failure_labels)
            for m, rs in groups.items()
        },
        terminations={m: Counter(r.trajectory.termination for r in rs)
                      for m, rs in groups.items()},
        usage=usage,
        cost_basis=basis,
        routes=routes,
        margin=margin,
    )


def plot_ladder(
    ladder: Mapping[str, Mapping[str, RateCI]], path: str | Path, tiers: Sequence[str] = TIERS
) -> Path:
    """Plot pass rate per tier, one line per model with Wilson-interval error bars, as a PNG.

    Matplotlib is imported here and drawn through its Agg canvas, leaving pyplot untouched.

    Raises:
        ImportError: without matplotlib, saying how to install it.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(f"plotting the ladder needs matplotlib: {PLOT_HINT}") from exc

    fig = Figure(figsize=(max(6.0, 1.1 * len(tiers)), 4.0))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    spread = 0.25 / max(1, len(ladder) - 1)
    for i, (model, cells) in enumerate(ladder.items()):
        points = [(x, cells[t]) for x, t in enumerate(tiers) if cells[t].n]
        xs = [x + (i - (len(ladder) - 1) / 2) * spread for x, _ in points]
        ys = [ci.rate for _, ci in points]
        yerr = [[ci.rate - ci.low for _, ci in points], [ci.high - ci.rate for _, ci in points]]
        ax.errorbar(xs, ys, yerr=yerr, marker="o", capsize=3, label=model)
    ax.set_xticks(range(len(tiers)), list(tiers))
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("tier")
    ax.set_ylabel("pass rate")
    ax.set_title(f"AgentFloor tier ladder (95% {METHOD} interval)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, format="png", dpi=120)
    return out


def render_markdown(
    records: Sequence[RunRecord],
    prices: Prices | None = None,
    params: Mapping[str, float] | None = None,
    *,
    image: str | None = None,
    margin: float = 0.10,
) -> str:
    """Render the full report of ``records`` as Markdown (see :func:`build_report`)."""
    report = build_report(records, prices, params, margin=margin)
    return report.markdown(image)


def render_ladder_text(records: Sequence[RunRecord]) -> str:
    """Render a plain-text ladder for the console: one row per model, cells like ``5/5 100%``."""
    tiers = _tiers(records)
    head = ["model", *tiers, OVERALL]
    rows = []
    for model, rs in by_model(records).items():
        cells = _columns(rs, tiers)
        row = [model]
        for column in [*tiers, OVERALL]:
            passed, n = sum(r.passed for r in cells[column]), len(cells[column])
            row.append(f"{passed}/{n} {passed / n:.0%}" if n else "-")
        rows.append(row)
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [head, *rows]
    )


def write_report(
    records: Sequence[RunRecord],
    out_dir: str | Path,
    prices: Prices | None = None,
    params: Mapping[str, float] | None = None,
    *,
    margin: float = 0.10,
) -> Path:
    """Write ``report.md``, then ``ladder.png``, into ``out_dir`` (created if missing).

    Without matplotlib (the ``plot`` extra) the plot is left out, and a note on stderr says
    how to install it.

    Returns:
        The path of ``report.md``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = build_report(records, prices, params, margin=margin)
    plotting = _can_plot()
    path = write_text_atomic(out / "report.md",
                             report.markdown(image="ladder.png" if plotting else None))
    if plotting:
        plot_ladder(report.ladder, out / "ladder.png", report.tiers)
    else:
        print(f"note: no ladder.png: plotting needs matplotlib ({PLOT_HINT})", file=sys.stderr)
    return path


def _can_plot() -> bool:
    """Whether matplotlib (the ``plot`` extra) is installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
