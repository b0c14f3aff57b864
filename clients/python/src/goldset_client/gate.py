"""`goldset gate`: fail a pull request whose run loses recall past a threshold, and not one
whose loss is within noise.

    goldset gate wiki --run run.trec --baseline prod --max-drop 3 --junit gate.xml

Uploads the run, asks the server to compare it with the baseline query by query (the
server's one-sided paired t-test, the rule its drop alerts use: the client computes no
statistics), waits until both runs are scored on the version compared, prints a table and
writes a JUnit XML report with one testcase per (metric, slice). The baseline is a version
tag (the set's newest other run of the same system and stage, scored on the tag's version)
or a run's name (that run, on the latest version). The candidate run is archived once
compared (it stays, with its scores, out of leaderboards and later baselines) unless --keep.

Exit status: 0 every figure passes, 1 a figure dropped past --max-drop *and* significantly,
2 bad usage or a server error (a bad token, an unknown set or baseline, a timeout waiting).
"""

from __future__ import annotations

import argparse
import os
import sys
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from typing import TextIO

from goldset_client.client import GoldsetClient
from goldset_client.errors import GoldsetClientError
from goldset_client.types import ComparisonFigure, RunComparison, Stage

PASS, DROP, ERROR = 0, 1, 2


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    gate = commands.add_parser(
        "gate",
        help="upload a run and fail (exit 1) when it drops past --max-drop and significantly against a baseline",
        description=__doc__.split("\n\n")[2],
    )
    gate.add_argument("slug", metavar="SLUG")
    gate.add_argument("--run", required=True, metavar="FILE", help="the candidate's run file")
    gate.add_argument("--baseline", required=True, metavar="RUN_OR_TAG", help="a version tag (prod) or a run's name")
    gate.add_argument("--max-drop", required=True, type=float, metavar="POINTS", help="points a figure may drop before it fails")
    gate.add_argument(
        "--metric", action="append", default=[], help="a metric to compare (repeat; default recall@k_first and recall@k_final)"
    )
    gate.add_argument("--slice", action="append", default=[], help="also compare on this slice, lang=de or page:kind=faq (repeat)")
    gate.add_argument("--junit", default=None, metavar="FILE", help="write a JUnit XML report here")
    gate.add_argument("--system", default=None, help="the candidate's system (default: the baseline run's, or the set's newest run's)")
    gate.add_argument("--stage", default=None, choices=("first_stage", "reranked", "other"), help="its stage (default as --system)")
    gate.add_argument("--name", default=None, help="the candidate run's name (default: 'gate FILE TIME')")
    gate.add_argument("--format", default=None, help="the run's format as the server names it (default: detected)")
    gate.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the scores at most (default 600)")
    gate.add_argument("--keep", action="store_true", help="leave the candidate run unarchived")


def cmd_gate(client: GoldsetClient, args: argparse.Namespace, out: TextIO) -> int:
    """The gate; every error from the server or the files is exit 2, said on standard error."""
    try:
        return _gate(client, args, out)
    except GoldsetClientError as exc:
        print(f"goldset gate: {exc}", file=sys.stderr)
        return ERROR


def _gate(client: GoldsetClient, args: argparse.Namespace, out: TextIO) -> int:
    if not os.path.isfile(args.run):
        raise GoldsetClientError(f"--run: run file {args.run!r} does not exist")
    system, stage = _system_and_stage(client, args)
    name = args.name or f"gate {os.path.basename(args.run)} {datetime.now(UTC):%Y-%m-%dT%H:%M:%S.%fZ}"
    run = client.upload_run(args.slug, args.run, system=system, stage=stage, name=name, format=args.format)
    try:
        comparison = client.wait_for_comparison(
            args.slug,
            run["id"],
            baseline=args.baseline,
            max_drop=args.max_drop,
            metrics=args.metric,
            slices=args.slice,
            timeout=args.timeout,
        )
    finally:
        if not args.keep:
            client.archive_run(args.slug, run["id"])
    write_table(out, comparison)
    if args.junit:
        write_junit(args.junit, args.slug, comparison)
    return PASS if comparison["passed"] else DROP


def _system_and_stage(client: GoldsetClient, args: argparse.Namespace) -> tuple[str, Stage]:
    """--system and --stage, else the baseline run's (when it names a run), else the set's
    newest run's: a tag's baseline is the newest other run of the candidate's system and stage."""
    if args.system and args.stage:
        return args.system, args.stage
    runs = client.runs(args.slug)
    named = [run for run in runs if run["name"] == args.baseline]
    source = named[0] if named else max(runs, key=lambda run: run["id"], default=None)
    if source is None:
        raise GoldsetClientError(f"{args.slug} has no run to take the system and stage from; give --system and --stage")
    return args.system or source["system"], args.stage or source["stage"]


def figure_name(figure: ComparisonFigure) -> str:
    return f"{figure['metric']} on {figure['slice'] or 'all queries'}"


def write_table(out: TextIO, comparison: RunComparison) -> None:
    """One row per (metric, slice): means as fractions, drops in points, the verdict."""
    tag = f" (tag {comparison['tag']})" if comparison["tag"] else ""
    out.write(
        f"{comparison['candidate_run']!r} against {comparison['baseline_run']!r} on version {comparison['version']}{tag} "
        f"{comparison['content_hash'][:12]}, max drop {comparison['max_drop']:g} points\n"
    )
    out.write("\t".join(["metric", "slice", "queries", "baseline", "candidate", "drop_pts", "detectable_pts", "p", "verdict"]) + "\n")
    for f in comparison["figures"]:
        detectable = f"{f['detectable_points']:.2f}" if f["detectable_points"] is not None else "-"
        verdict = "FAIL" if f["failed"] else ("drop within threshold" if f["significant"] and f["drop_points"] > 0 else "pass")
        row = [f["metric"], f["slice"] or "all", str(f["queries"]), f"{f['baseline']:.4f}", f"{f['candidate']:.4f}"]
        out.write("\t".join([*row, f"{f['drop_points']:.2f}", detectable, f"{f['p_value']:.4g}", verdict]) + "\n")
    out.write(("PASS" if comparison["passed"] else "FAIL: a drop past the threshold that is not noise") + "\n")


def write_junit(path: str, slug: str, comparison: RunComparison) -> None:
    """A JUnit XML report: one testcase per (metric, slice), a failure where it failed."""
    figures = comparison["figures"]
    suite = ET.Element(
        "testsuite",
        name=f"goldset gate {slug}",
        tests=str(len(figures)),
        failures=str(sum(f["failed"] for f in figures)),
        errors="0",
    )
    properties = ET.SubElement(suite, "properties")
    for key in ("version", "content_hash", "tag", "baseline_run", "candidate_run", "max_drop"):
        ET.SubElement(properties, "property", name=key, value=str(comparison[key]))
    for f in figures:
        case = ET.SubElement(suite, "testcase", classname=f"goldset.{slug}.v{comparison['version']}", name=figure_name(f))
        summary = (
            f"{f['baseline']:.4f} -> {f['candidate']:.4f} over {f['queries']} queries: drop {f['drop_points']:.2f} points "
            f"(max {comparison['max_drop']:g}), p = {f['p_value']:.4g}, detectable {f['detectable_points']} points"
        )
        if f["failed"]:
            ET.SubElement(case, "failure", message=f"{figure_name(f)} dropped {f['drop_points']:.2f} points", type="drop").text = summary
        ET.SubElement(case, "system-out").text = summary
    try:
        ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
    except OSError as exc:
        raise GoldsetClientError(f"--junit: cannot write {path}: {exc.strerror or exc}") from None
