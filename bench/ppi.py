"""Prediction-powered recall against human-only recall, with known truth (lib.ppi).

    .venv/bin/python bench/ppi.py [--trials 1000 --population 5000 --prevalence 0.04 --found 600
        --model-pairs 1000 --human-pairs 100 --sensitivity 0.9 --specificity 0.99 --seed 20261202]

Each trial makes a synthetic completeness population: --population unjudged pairs, each
relevant with probability --prevalence (the truth, drawn anew each trial), beside --found
relevant pages the labels hold already, so the true recall of the labels is
found / (found + relevant in the population). A model calls each pair: a relevant pair
relevant with probability --sensitivity, a non-relevant one non-relevant with probability
--specificity (its accuracy is printed). Then --model-pairs pairs are drawn uniformly for
the model and, independently, --human-pairs pairs uniformly for people, whose calls are the
truth (a completeness sample judged without error).

It prints the data sizes, then, over the trials, the share of trials whose 95% interval holds
the true recall (coverage) and the mean width, for the prediction-powered interval (model +
human sample) and for the human-only Wilson interval from the same human sample, and PASS when
the prediction-powered coverage is at least 93% (MISS otherwise). Nothing is timed; it runs in
about a second.

The model must be good for the model labels to help. The interval's width comes from the
model's disagreements with people (lib.ppi): when the model errs on more pairs than are
relevant, as a model of specificity 0.95 does at a prevalence of 0.04
(--sensitivity 0.85 --specificity 0.95), the prediction-powered interval is WIDER than the
human-only one (1.15x at the defaults otherwise, still covering 94.9%): the page shows both
intervals side by side for that reason.
"""

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lib.ppi import human_share, ppi_share, recall_estimate  # noqa: E402  (needs the repository on sys.path)

COVERAGE_TARGET = 0.93


@dataclass(frozen=True)
class Setting:
    population: int = 5000
    prevalence: float = 0.04
    found: int = 600
    model_pairs: int = 1000
    human_pairs: int = 100
    sensitivity: float = 0.9
    specificity: float = 0.99

    @property
    def model_accuracy(self) -> float:
        """The share of pairs the model calls right, in expectation."""
        return self.prevalence * self.sensitivity + (1 - self.prevalence) * self.specificity


@dataclass
class Outcome:
    """Coverage (fractions of trials) and mean widths (recall points as fractions) of both intervals."""

    trials: int
    ppi_covered: int = 0
    human_covered: int = 0
    ppi_width: float = 0.0
    human_width: float = 0.0
    true_recall: float = 0.0

    @property
    def ppi_coverage(self) -> float:
        return self.ppi_covered / self.trials

    @property
    def human_coverage(self) -> float:
        return self.human_covered / self.trials

    @property
    def ppi_mean_width(self) -> float:
        return self.ppi_width / self.trials

    @property
    def human_mean_width(self) -> float:
        return self.human_width / self.trials

    @property
    def mean_true_recall(self) -> float:
        return self.true_recall / self.trials


def simulate(setting: Setting, trials: int, seed: int) -> Outcome:
    """Run `trials` trials of `setting` (module docstring) with numpy's Generator seeded by `seed`."""
    rng = np.random.default_rng(seed)
    outcome = Outcome(trials=trials)
    for _ in range(trials):
        truth = rng.random(setting.population) < setting.prevalence
        called = np.where(
            truth, rng.random(setting.population) < setting.sensitivity, rng.random(setting.population) >= setting.specificity
        )
        true_recall = setting.found / (setting.found + int(truth.sum()))
        model_drawn = rng.choice(setting.population, size=setting.model_pairs, replace=False)
        human_drawn = rng.choice(setting.population, size=setting.human_pairs, replace=False)
        human_truth = truth[human_drawn]
        ppi = recall_estimate(setting.found, setting.population, ppi_share(called[model_drawn], human_truth, called[human_drawn]))
        human = recall_estimate(setting.found, setting.population, human_share(int(human_truth.sum()), setting.human_pairs))
        outcome.true_recall += true_recall
        outcome.ppi_covered += ppi.low <= true_recall <= ppi.high
        outcome.human_covered += human.low <= true_recall <= human.high
        outcome.ppi_width += ppi.width
        outcome.human_width += human.width
    return outcome


def main() -> None:
    defaults = Setting()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261202)
    for name in ("population", "found", "model_pairs", "human_pairs"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(defaults, name))
    for name in ("prevalence", "sensitivity", "specificity"):
        parser.add_argument(f"--{name}", type=float, default=getattr(defaults, name))
    args = parser.parse_args()
    setting = Setting(
        population=args.population,
        prevalence=args.prevalence,
        found=args.found,
        model_pairs=args.model_pairs,
        human_pairs=args.human_pairs,
        sensitivity=args.sensitivity,
        specificity=args.specificity,
    )
    outcome = simulate(setting, args.trials, args.seed)
    print(f"trials: {args.trials} (seed {args.seed})")
    print(
        f"population: {setting.population} unjudged pairs, each relevant with probability {setting.prevalence} "
        f"(about {setting.population * setting.prevalence:.0f} relevant); {setting.found} relevant pages found already"
    )
    print(
        f"model: sensitivity {setting.sensitivity}, specificity {setting.specificity}, "
        f"accuracy {setting.model_accuracy:.3f}; it calls {setting.model_pairs} pairs drawn uniformly"
    )
    print(f"people: {setting.human_pairs} pairs drawn uniformly (the completeness sample), judged without error")
    print(f"mean true recall of the labels: {outcome.mean_true_recall:.4f}")
    print()
    print(f"{'95% interval of the recall':<48}{'coverage':>10}{'mean width':>12}")
    print(
        f"{f'prediction-powered ({setting.model_pairs} model + {setting.human_pairs} human)':<48}"
        f"{outcome.ppi_coverage:>10.1%}{outcome.ppi_mean_width:>12.4f}"
    )
    print(f"{f'human only, Wilson ({setting.human_pairs} human)':<48}{outcome.human_coverage:>10.1%}{outcome.human_mean_width:>12.4f}")
    print()
    verdict = "PASS" if outcome.ppi_coverage >= COVERAGE_TARGET else "MISS"
    print(
        f"{verdict}: prediction-powered coverage {outcome.ppi_coverage:.1%} against the target of at least {COVERAGE_TARGET:.0%}; "
        f"width {outcome.ppi_mean_width / outcome.human_mean_width:.2f}x the human-only one"
    )


if __name__ == "__main__":
    main()
