from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from answers.generators import generator_add
from answers.management.options import add_call_arguments, call_fields, command_error, text_file
from answers.models import Generator
from goldenset.models import GoldenSet
from lib.errors import GoldsetError


def _header(text: str) -> list[str]:
    name, separator, value = text.partition(":")
    if not separator:
        raise CommandError(f"--header: {text!r} is not 'Name: value'")
    return [name.strip(), value.strip()]


class Command(BaseCommand):
    help = (
        "Add a generator to a golden set: how your team makes an answer from a question and its context, for the oracle "
        "experiment. --preset openai: a model behind an OpenAI-compatible chat API (vLLM, Ollama, llama.cpp's server, "
        "hosted APIs), --url its base URL ending in /v1, with a prompt holding {{question}} and {{context}} (Goldset's "
        "default asks for a short answer from the context only). The API key is read at run time from the variable "
        "--api-key-env names (JUDGE_..., sent only to the hosts in JUDGE_..._HOSTS), never stored. "
        "Example: manage.py generator_add wiki-demo --name local --preset openai --url http://127.0.0.1:8000/v1 --model llama-3.1-8b. "
        "--preset endpoint: your own RAG answer endpoint, --url its URL, --body-template its JSON body with {{query}} and "
        "{{context}} (the passages, a JSON list of {id, text}), --answer-path where the answer's text is in its JSON. "
        "Example: manage.py generator_add wiki-demo --name rag --preset endpoint --url https://rag.internal/answer "
        '--body-template \'{"question": {{query}}, "passages": {{context}}}\' --answer-path data.answer'
    )

    def add_arguments(self, parser):
        parser.add_argument("golden_set", metavar="SLUG", help="slug of the golden set")
        parser.add_argument("--name", required=True, help="the generator's name, unique in the set")
        parser.add_argument("--preset", required=True, choices=Generator.Kind.values, help="openai (a chat API) or endpoint (your own)")
        parser.add_argument("--url", required=True, metavar="URL", help="openai: the base URL, ending in /v1; endpoint: its URL")
        parser.add_argument("--model", default="", help="openai: the model's name as the API knows it")
        parser.add_argument("--prompt-file", type=Path, metavar="F", help="openai: the prompt, with {{question}} and {{context}}")
        parser.add_argument("--temperature", type=float, default=0.0, metavar="T", help="openai: from 0 to 2 (default 0)")
        parser.add_argument("--api-key-env", default="", metavar="VAR", help="openai: the variable holding the API key (JUDGE_...)")
        parser.add_argument("--body-template", default="", metavar="T", help="endpoint: the JSON body, with {{query}} and {{context}}")
        parser.add_argument("--answer-path", default="", metavar="P", help="endpoint: where the answer's text is, like data.answer")
        parser.add_argument(
            "--header", action="append", default=[], metavar="'NAME: VALUE'", help="endpoint: a header; secrets as ${SEARCH_TOKEN}"
        )
        add_call_arguments(parser, "generator")

    def handle(self, *args, **options):
        golden_set = GoldenSet.objects.filter(slug=options["golden_set"]).first()
        if golden_set is None:
            raise CommandError(f"no golden set {options['golden_set']!r}")
        endpoint = options["preset"] == Generator.Kind.ENDPOINT
        fields = {}
        if endpoint:
            fields["request"] = {
                "url": options["url"],
                "method": "POST",
                "body_template": options["body_template"],
                "headers": [_header(text) for text in options["header"]],
            }
            fields["answer_path"] = options["answer_path"]
        else:
            if options["body_template"] or options["answer_path"] or options["header"]:
                raise CommandError("--body-template, --answer-path and --header are for --preset endpoint")
            fields["base_url"] = options["url"]
            fields["temperature"] = options["temperature"]
            prompt = text_file(options["prompt_file"], "--prompt-file")
            if prompt is not None:
                fields["prompt"] = prompt
        try:
            generator = generator_add(
                golden_set=golden_set,
                name=options["name"],
                kind=options["preset"],
                model=options["model"],
                api_key_env=options["api_key_env"],
                **call_fields(options),
                **fields,
            )
        except GoldsetError as exc:
            raise command_error(exc) from exc
        what = (
            f"answer endpoint {generator.base_url}, answer at {generator.answer_path}"
            if endpoint
            else f"{generator.model} at {generator.base_url}"
        )
        self.stdout.write(f"generator {generator.name!r} of {golden_set.slug}: {what}, prompt {generator.prompt_hash[:12]}")
