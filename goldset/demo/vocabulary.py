"""The demo company's vocabulary and the templates of its pages and questions, read from the
data files beside this module (data/*.json, data/guidelines.txt) into plain Python values."""

import json
from dataclasses import dataclass
from importlib.resources import files

DATA = files(__package__) / "data"


def _read(name: str):
    return json.loads((DATA / name).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Symptom:
    key: str
    names: dict[str, str]
    signal: str
    causes: tuple[str, str]
    check: str
    fix: str


@dataclass(frozen=True)
class Task:
    key: str
    phrases: dict[str, str]
    noun: str
    command: str
    verify: str
    why: str


@dataclass(frozen=True)
class Policy:
    key: str
    names: dict[str, str]
    rules: tuple[str, str, str]


# The annotation guidelines of the demo set, shown on the judging screen.
GUIDELINES: str = (DATA / "guidelines.txt").read_text(encoding="utf-8")

# --- the company (data/company.json) ------------------------------------------------------

_company = _read("company.json")
LANGS: list[str] = _company["langs"]
LANG_WEIGHTS: list[int] = _company["lang_weights"]
DOC_TYPES: list[str] = _company["doc_types"]
# Per doc type, for English pages and for the others: incident reports and design documents
# are written in English; the hubs abroad keep their own runbooks, how-tos, FAQs and policies.
DOC_TYPE_WEIGHTS: dict[str, list[int]] = _company["doc_type_weights"]
# (service, owning team, share of the wiki's pages about it)
SERVICES: list[tuple[str, str, int]] = [(s["name"], s["team"], s["weight"]) for s in _company["services"]]
# Onboarded this month: every page about them is new.
NEW_SERVICES: list[tuple[str, str]] = [(s["name"], s["team"]) for s in _company["new_services"]]
# Switched off in October; its question leaves the set in version 2.
RETIRED_SERVICE: str = _company["retired_service"]["name"]
RETIRED_ON: str = _company["retired_service"]["switched_off_on"]
TEAMS: list[str] = _company["teams"]
TEAM_OF: dict[str, str] = {service: team for service, team, _ in SERVICES} | dict(NEW_SERVICES)
PEOPLE: list[str] = _company["people"]
# Told apart when two pages would otherwise share a title: regions, hubs, environments.
QUALIFIERS: dict[str, list[str]] = _company["qualifiers"]
# An incident's impact by team; {k} is a drawn count.
IMPACT: dict[str, str] = _company["impact"]
MECHANISMS: list[str] = _company["mechanisms"]
# (an option a design document considered, why it was rejected)
ALTERNATIVES: list[tuple[str, str]] = [(a["option"], a["rejected_because"]) for a in _company["alternatives"]]
DESIGN_STATUS: list[str] = _company["design_status"]

# --- what pages are about (data/symptoms.json, tasks.json, policies.json) ------------------
# Commands in `check`, `fix`, `command` and `verify` take {service}, {team} and {n}.

SYMPTOMS = [Symptom(s["key"], s["names"], s["signal"], tuple(s["causes"]), s["check"], s["fix"]) for s in _read("symptoms.json")]
TASKS = [Task(t["key"], t["phrases"], t["noun"], t["command"], t["verify"], t["why"]) for t in _read("tasks.json")]
POLICIES = [Policy(p["key"], p["names"], tuple(p["rules"])) for p in _read("policies.json")]
SYMPTOM_BY_KEY = {symptom.key: symptom for symptom in SYMPTOMS}
TASK_BY_KEY = {task.key: task for task in TASKS}
POLICY_BY_KEY = {policy.key: policy for policy in POLICIES}

# --- page templates (data/pages.json) -------------------------------------------------------
# TITLES[doc type][lang]. BODIES[(body key, lang)] is a list of blocks: ["p", template] or
# ["ul", [template, ...]]; a template given as a list is one of several phrasings. The body
# key is the doc type, or faq-problem / faq-task for a FAQ. Commands are marked with
# backticks and become <code> in HTML pages.

_pages = _read("pages.json")
TITLES: dict[str, dict[str, str]] = _pages["titles"]
BODIES: dict[tuple[str, str], list] = {
    (body_key, lang): blocks for body_key, by_lang in _pages["bodies"].items() for lang, blocks in by_lang.items()
}

# --- questions (data/queries.json) ------------------------------------------------------------

_queries = _read("queries.json")
# QUERY_TEMPLATES[(intent, lang)]: phrasings; an intent without templates in a language is
# asked in English.
QUERY_TEMPLATES: dict[tuple[str, str], list[str]] = {
    (intent, lang): texts for intent, by_lang in _queries["templates"].items() for lang, texts in by_lang.items()
}
INTENTS: list[str] = _queries["intents"]
INTENT_WEIGHTS: list[int] = _queries["intent_weights"]
# How well a doc type answers a question of each kind: 3 answers it, 2 holds part of it.
# Any other page about the same subject is at least related (1).
FIT: dict[str, dict[str, int]] = _queries["fit"]
# The doc type a "related" page from another subject must have to be worth a 1.
RELATED_DOC_TYPE: dict[str, str] = _queries["related_doc_type"]

# The notes annotators write beside a grade (data/notes.json), by grade.
NOTES: dict[int, list[str]] = {int(grade): notes for grade, notes in _read("notes.json").items()}
