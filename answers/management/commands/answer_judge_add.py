from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from answers.answer_judging import DEFAULT_RUBRIC, answer_judge_add
from answers.management.options import command_error, price, text_file
from goldenset.management.progress import user_by_name
from goldenset.models import GoldenSet
from lib.errors import GoldsetError


class Command(BaseCommand):
    help = (
        "Add an answer judge to a golden set: a model behind an OpenAI-compatible chat API that grades generated answers "
        "against the reference answers with a rubric (correct, partly or wrong; supported by its context or not). Its "
        "grades are model judgments, kept apart: they never change a label, a version or a recall score. --rubric-file: "
        "your rubric, with {{question}}, {{reference}}, {{answer}} and {{context}}, asking for the lines 'grade: "
        "correct|partly|wrong' and 'supported: yes|no' (Goldset's default does). The API key is read at run time from the "
        "variable --api-key-env names (JUDGE_...), never stored. "
        "Example: manage.py answer_judge_add wiki-demo --name strict --url http://127.0.0.1:8000/v1 --model qwen2.5-7b"
    )

    def add_arguments(self, parser):
        parser.add_argument("golden_set", metavar="SLUG", help="slug of the golden set")
        parser.add_argument("--name", required=True, help="the judge's name, unique in the set")
        parser.add_argument("--url", required=True, metavar="BASE_URL", help="the API's base URL, ending in /v1")
        parser.add_argument("--model", required=True, help="the model's name as the API knows it")
        parser.add_argument("--rubric-file", type=Path, metavar="F", help="the rubric (default: Goldset's)")
        parser.add_argument("--api-key-env", default="", metavar="VAR", help="the variable holding the API key (JUDGE_...)")
        parser.add_argument("--max-in-flight", type=int, default=4, metavar="N", help="requests open at once (default 4)")
        parser.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds an attempt may take (default 60)")
        parser.add_argument("--retries", type=int, default=3, metavar="N", help="attempts after a failed one (default 3)")
        parser.add_argument("--price-in", metavar="P", help="your price per million input tokens, to count the cost")
        parser.add_argument("--price-out", metavar="P", help="your price per million output tokens")
        parser.add_argument("--user", help="username recorded as the judge's creator")

    def handle(self, *args, **options):
        golden_set = GoldenSet.objects.filter(slug=options["golden_set"]).first()
        if golden_set is None:
            raise CommandError(f"no golden set {options['golden_set']!r}")
        rubric = text_file(options["rubric_file"], "--rubric-file")
        try:
            judge = answer_judge_add(
                golden_set=golden_set,
                name=options["name"],
                base_url=options["url"],
                model=options["model"],
                rubric=DEFAULT_RUBRIC if rubric is None else rubric,
                api_key_env=options["api_key_env"],
                max_in_flight=options["max_in_flight"],
                timeout_seconds=options["timeout"],
                retries=options["retries"],
                price_in=price(options["price_in"], "--price-in"),
                price_out=price(options["price_out"], "--price-out"),
                user=user_by_name(options["user"]),
            )
        except GoldsetError as exc:
            raise command_error(exc) from exc
        self.stdout.write(
            f"answer judge {judge.name!r} of {golden_set.slug}: {judge.model} at {judge.base_url}, rubric {judge.rubric_hash[:12]}"
        )
