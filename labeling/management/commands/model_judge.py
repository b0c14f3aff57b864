from decimal import Decimal, InvalidOperation
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from goldenset.management.progress import user_by_name
from goldenset.models import GoldenSet
from labeling.model_labels.jobs import judge_job_run, judge_job_submit
from labeling.model_labels.local_judge import default_config
from labeling.models import JudgeJob
from lib.errors import GoldsetError
from lib.llm_judging import DEFAULT_PROMPT, cost


def _price(text: str | None) -> Decimal | None:
    if text is None:
        return None
    try:
        return Decimal(text)
    except InvalidOperation as exc:
        raise CommandError(f"{text!r} is not a price") from exc


class Command(BaseCommand):
    help = (
        "Have a model behind an OpenAI-compatible chat API grade the pairs of a pool (or --sample N of them), here and "
        "now, as model labels: kept apart from people's labels, never in a version or a score. Pairs this model already "
        "graded with this prompt are skipped, so a run stopped half way continues when run again. The API key is read "
        "from the environment variable --api-key-env names (JUDGE_...), never from the command line. "
        "Example: JUDGE_OPENAI_KEY=... manage.py model_judge wiki-demo --pool 3 --base-url https://api.openai.com/v1 "
        "--model gpt-4o-mini --api-key-env JUDGE_OPENAI_KEY --sample 500. "
        "With --local, the packaged all-MiniLM-L6-v2 grades offline on this machine instead (the optional model extra, "
        "requirements-model.txt): the cosine of query and page mapped to grades by thresholds (--config-file, default "
        "chosen on the demo). Example: manage.py model_judge wiki-demo --pool 3 --local"
    )

    def add_arguments(self, parser):
        parser.add_argument("golden_set", metavar="SLUG", help="slug of the golden set")
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--pool", type=int, metavar="ID", help="the pool whose pairs are graded")
        which.add_argument(
            "--judged",
            action="store_true",
            help="grade the pairs people judged (the latest version's labels), which calibration compares the model with",
        )
        parser.add_argument("--local", action="store_true", help="grade with the packaged local model instead of a chat API")
        parser.add_argument(
            "--config-file",
            type=Path,
            metavar="F",
            help="--local: the thresholds, lines 'grade G from cosine C' (default: the ones chosen on the demo)",
        )
        parser.add_argument("--base-url", default="", metavar="URL", help="chat: the API's base URL (…/chat/completions is added)")
        parser.add_argument("--model", default="", metavar="NAME", help="chat: the model's name as the API knows it")
        parser.add_argument("--api-key-env", default="", metavar="VAR", help="the environment variable holding the API key")
        parser.add_argument("--sample", type=int, metavar="N", help="grade N of the pairs drawn at random")
        parser.add_argument(
            "--prompt-file", type=Path, metavar="F", help="the prompt, with {query} and {passage} (default: Goldset's UMBRELA-style prompt)"
        )
        parser.add_argument("--in-flight", type=int, default=4, metavar="N", help="requests open at once (default 4)")
        parser.add_argument(
            "--batch",
            type=int,
            default=1,
            metavar="N",
            help="grade up to N passages of one query in one request, numbered in the prompt (default 1: a request per pair; at most 20)",
        )
        parser.add_argument("--price-in", metavar="P", help="your price per million input tokens, to count the cost")
        parser.add_argument("--price-out", metavar="P", help="your price per million output tokens")
        parser.add_argument("--user", help="username recorded as the job's creator")

    def handle(
        self,
        *args,
        golden_set,
        pool,
        local,
        config_file,
        base_url,
        model,
        api_key_env,
        sample,
        prompt_file,
        in_flight,
        batch,
        price_in,
        price_out,
        user,
        **options,
    ):
        found = GoldenSet.objects.filter(slug=golden_set).first()
        if found is None:
            raise CommandError(f"no golden set {golden_set!r}")
        if not local and (not base_url or not model):
            raise CommandError("a chat judge needs --base-url and --model (or give --local for the packaged local model)")
        read = config_file if local else prompt_file
        try:
            prompt = read.read_text(encoding="utf-8") if read else (default_config(found.grade_values()) if local else DEFAULT_PROMPT)
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read the {'configuration' if local else 'prompt'} file {read}: {exc}") from exc
        try:
            job = judge_job_submit(
                golden_set=found,
                pool_id=pool,
                pairs=JudgeJob.Pairs.JUDGED if options["judged"] else JudgeJob.Pairs.POOL,
                kind=JudgeJob.Kind.LOCAL if local else JudgeJob.Kind.CHAT,
                base_url=base_url,
                model=model,
                prompt_text=prompt,
                job_task=None,
                api_key_env=api_key_env,
                sample_size=sample,
                max_in_flight=in_flight,
                price_in=_price(price_in),
                price_out=_price(price_out),
                user=user_by_name(user),
                batch_size=batch,
            )
        except GoldsetError as exc:
            raise CommandError("\n".join([exc.message, *exc.problems])) from exc
        self.stdout.write(
            f"judge job {job.pk}: {job.model}, {'thresholds' if local else 'prompt'} {job.prompt_hash[:12]}, {'the pairs people judged' if options['judged'] else f'pool {pool}'}"
        )

        def progress(current):
            self.stdout.write(f"  {current.settled} of {current.pairs_total} pairs settled")

        job = judge_job_run(job.pk, on_chunk=progress)
        money = cost(job.prompt_tokens, job.completion_tokens, job.price_in, job.price_out)
        usage = (
            f"forward passes: {job.requests}, word pieces: {job.prompt_tokens} (offline, free)"
            if local
            else f"requests: {job.requests}, prompt tokens: {job.prompt_tokens}, completion tokens: {job.completion_tokens}"
            + (f", cost at your prices: {money}" if money is not None else "")
        )
        lines = [
            f"pairs: {job.pairs_total} ({job.pairs_done} graded, {job.pairs_failed} failed, {job.pairs_skipped} labelled already)",
            usage,
            "model labels are kept apart: no version, export or score reads them",
        ]
        for line in lines:
            self.stdout.write(line)
        if job.status == job.Status.FAILED:
            raise CommandError(job.error)
