"""The `goldset` command: pull pinned qrels, push a run (and wait for its scores), read scores.

    goldset pull wiki-demo --version 3 -o qrels.trec
    goldset push run.trec --golden-set wiki-demo --system bm25 --stage first_stage --wait
    goldset scores wiki-demo --version 3
    goldset pull wiki-demo --version prod -o qrels.trec      (a tag, resolved to its number now)
    goldset gate wiki-demo --run run.trec --baseline prod --max-drop 3 --junit gate.xml

The server and token come from --url / --token, else GOLDSET_URL / GOLDSET_TOKEN. `-` is
standard output for pull's -o and standard input for push's file. Exit status 0 on
success, 1 when Goldset refused or failed (the reason on standard error), 2 for bad usage
or when Goldset could not be reached (refused, timed out, TLS; one line naming the URL);
`gate` has its own (goldset_client.gate): 0 pass, 1 a drop, 2 usage or server error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from goldset_client import __version__
from goldset_client.client import QREL_FORMATS, GoldsetClient
from goldset_client.errors import GoldsetClientError, GoldsetConnectionError
from goldset_client.gate import add_parser as add_gate_parser
from goldset_client.gate import cmd_gate
from goldset_client.types import Evaluation

STAGES = ("first_stage", "reranked", "other")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="goldset", description="Goldset's API from the shell, for eval jobs.")
    top.add_argument("--url", default=None, help="the Goldset server (default: $GOLDSET_URL)")
    top.add_argument("--token", default=None, help="an API token, gs_... (default: $GOLDSET_TOKEN)")
    top.add_argument("--version", action="version", version=f"goldset {__version__}")
    top.add_argument(
        "--cache-dir", default=None, help="where pulled qrels are cached (default: $GOLDSET_CACHE_DIR or ~/.cache/goldset-client)"
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands.add_parser("sets", help="list the golden sets the token may read")
    versions = commands.add_parser("versions", help="list a set's versions, newest first, with their content hashes")
    versions.add_argument("slug", metavar="SLUG")

    publish = commands.add_parser("publish", help="publish the set's resolved labels as its next version, and wait for it")
    publish.add_argument("slug", metavar="SLUG")
    publish.add_argument("--note", default="", help="what changed, shown with the version")
    publish.add_argument("--no-wait", dest="wait", action="store_false", help="print the job and return at once")
    publish.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait at most (default 1800)")

    pull = commands.add_parser("pull", help="download a version's qrels (cached; checked against its content hash)")
    pull.add_argument("slug", metavar="SLUG")
    pull.add_argument(
        "--version", default=None, help="a version number or tag (prod), resolved to a number now (default: the latest; pin it in jobs)"
    )
    pull.add_argument("--hash", dest="expected_hash", default=None, help="the content hash pinned with the number: refuse any other")
    pull.add_argument("--format", choices=QREL_FORMATS, default="trec")
    pull.add_argument("--slice", default=None, help="one slice: lang=de, query:lang=de or page:kind=faq")
    pull.add_argument("-o", "--output", default="-", help="the file to write, or - for standard output (default)")

    push = commands.add_parser("push", help="upload a run file as it is, then optionally wait for its scores")
    push.add_argument("file", metavar="FILE", help="the run file, or - for standard input")
    push.add_argument("--golden-set", required=True, metavar="SLUG")
    push.add_argument("--system", required=True)
    push.add_argument("--stage", required=True, choices=STAGES)
    push.add_argument("--name", default=None, help="unique in the set (default: 'SYSTEM STAGE')")
    push.add_argument("--format", default=None, help="the run's format as the server names it (default: detected from the content)")
    push.add_argument("--series", default=None, help="make the run a night of this series")
    push.add_argument("--measured-at", default=None, help="ISO 8601: the night it measured (with --series; default now)")
    push.add_argument("--chunking", default=None, help="the corpus's chunking whose chunk ids the run returns (default: doc ids)")
    push.add_argument("--wait", action="store_true", help="wait until Goldset has scored it on the latest version, and print the scores")
    push.add_argument("--timeout", type=float, default=600.0, help="seconds --wait waits at most (default 600)")

    scores = commands.add_parser("scores", help="every run's scores on a version, or one run's")
    scores.add_argument("slug", metavar="SLUG")
    scores.add_argument("--version", default=None, help="a version number or tag (default: the latest); each row names the number")
    scores.add_argument("--run", type=int, default=None, help="only this run id")
    scores.add_argument("--json", action="store_true", help="the evaluations as the API answers them, full precision")

    add_gate_parser(commands)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        client = GoldsetClient(args.url, args.token, cache_dir=args.cache_dir)
        return COMMANDS[args.command](client, args, sys.stdout)
    except GoldsetConnectionError as exc:
        # Not Goldset refusing: nothing answered. 2, as `gate` says for a server it cannot use.
        print(f"goldset: {exc}", file=sys.stderr)
        return 2
    except GoldsetClientError as exc:
        print(f"goldset: {exc}", file=sys.stderr)
        return 1


def cmd_sets(client: GoldsetClient, args: argparse.Namespace, out: TextIO) -> int:
    for found in client.golden_sets():
        out.write(f"{found['slug']}\tlatest version {found['latest_version'] or '-'}\t{found['name']}\n")
    return 0


def cmd_versions(client: GoldsetClient, args: argparse.Namespace, out: TextIO) -> int:
    for version in client.versions(args.slug):
        out.write(f"{version['number']}\t{version['content_hash']}\t{version['label_count']} labels\t{version['note']}\n")
    return 0


def cmd_publish(client: GoldsetClient, args: argparse.Namespace, out: TextIO) -> int:
    job = client.publish(args.slug, note=args.note, wait=args.wait, timeout=args.timeout)
    version = job["version"]
    if version is None:
        out.write(f"publish job {job['id']} {job['status']}: follow it at {job['url']}\n")
    else:
        out.write(f"{args.slug} version {version['number']}\t{version['content_hash']}\t{version['label_count']} labels\n")
    return 0


def cmd_pull(client: GoldsetClient, args: argparse.Namespace, out: TextIO) -> int:
    folder = os.path.dirname(os.path.abspath(args.output)) if args.output != "-" else None
    if folder is not None and not os.path.isdir(folder):
        raise GoldsetClientError(f"cannot write {args.output}: the folder {folder} does not exist")
    number = args.version
    if number is None:
        number = client.golden_set(args.slug)["latest_version"]
        if number is None:
            raise GoldsetClientError(f"{args.slug} has no published version yet")
    qrels = client.qrels(args.slug, number, format=args.format, slice=args.slice, expected_hash=args.expected_hash)
    # A tag names the number it resolved to: what a job should pin.
    number = qrels.version
    if args.output == "-":
        out.flush()
        binary = getattr(out, "buffer", None)
        if binary is not None:
            binary.write(qrels.read_bytes())
            binary.flush()
        else:
            out.write(qrels.text())
    else:
        try:
            with open(args.output, "wb") as f:
                f.write(qrels.read_bytes())
        except OSError as exc:
            raise GoldsetClientError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    where = "cache, server said 304" if qrels.from_cache else "downloaded"
    print(f"{args.slug} version {number} ({qrels.content_hash[:12]}): {args.format} qrels, {where}", file=sys.stderr)
    return 0


def cmd_push(client: GoldsetClient, args: argparse.Namespace, out: TextIO) -> int:
    source: Any = sys.stdin.buffer if args.file == "-" else args.file
    if args.file != "-" and not os.path.isfile(args.file):
        raise GoldsetClientError(f"run file {args.file!r} does not exist")
    run = client.upload_run(
        args.golden_set,
        source,
        system=args.system,
        stage=args.stage,
        name=args.name,
        format=args.format,
        series=args.series,
        measured_at=args.measured_at,
        filename="stdin" if args.file == "-" else None,
        chunking=args.chunking,
    )
    out.write(f"run {run['id']} {run['name']!r}: {run['entry_count']} entries over {run['query_count']} queries\n")
    if args.wait:
        evaluation = client.wait_for_scores(args.golden_set, run["id"], timeout=args.timeout)
        write_scores(out, [evaluation])
    return 0


def cmd_scores(client: GoldsetClient, args: argparse.Namespace, out: TextIO) -> int:
    if args.run is not None:
        evaluations = client.run_evaluations(args.slug, args.run, version=args.version)
        if args.version is None:
            evaluations = evaluations[:1]  # the newest version's
    else:
        evaluations = client.scores(args.slug, version=args.version)
    if args.json:
        out.write(json.dumps(evaluations, indent=2) + "\n")
    else:
        write_scores(out, evaluations)
    return 0


def write_scores(out: TextIO, evaluations: list[Evaluation]) -> None:
    """A tab-separated table: one row per run, a column per metric (4 decimals; --json is exact),
    then a "#" line per run whose version was drawn from a query log with its traffic-weighted
    estimates and their 95% intervals."""
    metrics: list[str] = []
    for evaluation in evaluations:
        metrics += [name for name in evaluation["metrics"] if name not in metrics]
    out.write("\t".join(["run", "system", "stage", "version", "status", *metrics]) + "\n")
    for evaluation in evaluations:
        run = evaluation["run"]
        values = [f"{evaluation['scores'][m]:.4f}" if m in evaluation["scores"] else "-" for m in metrics]
        out.write("\t".join([run["name"], run["system"], run["stage"], str(evaluation["version"]), evaluation["status"], *values]) + "\n")
    for evaluation in evaluations:
        weighted = evaluation.get("weighted")
        if weighted:
            figures = ", ".join(f"{m} {w['estimate']:.4f} [{w['low']:.4f}, {w['high']:.4f}]" for m, w in weighted.items())
            apart = evaluation.get("unweighted_queries") or 0
            note = f"; {apart} queries added by hand are not in it" if apart else ""
            out.write(f"# {evaluation['run']['name']} for the traffic (95% interval): {figures}{note}\n")


COMMANDS = {
    "sets": cmd_sets,
    "versions": cmd_versions,
    "publish": cmd_publish,
    "pull": cmd_pull,
    "push": cmd_push,
    "scores": cmd_scores,
    "gate": cmd_gate,
}
