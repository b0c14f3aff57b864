from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from answers.answer_judging import DEFAULT_RUBRIC, answer_judge_add
from answers.management.options import add_call_arguments, call_fields, command_error, text_file
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
        add_call_arguments(parser, "judge")

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
                **call_fields(options),
            )
        except GoldsetError as exc:
            raise command_error(exc) from exc
        self.stdout.write(
            f"answer judge {judge.name!r} of {golden_set.slug}: {judge.model} at {judge.base_url}, rubric {judge.rubric_hash[:12]}"
        )
