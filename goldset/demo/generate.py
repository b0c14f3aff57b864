"""The demo golden set `wiki-demo` as records, generated from a fixed seed: pages, queries,
imported grades and the annotation rounds after them (no database: goldset.demo.services
loads them).

It tells the story of SEMANTICS.md's incident: the engineering wiki of a made-up parcel
company, Larkspur Logistics, with about 3,000 pages in five languages and six doc
types written over two years, and a burst of new runbooks in the last 30 days. The
support team's spreadsheet (version 1) predates those runbooks, so questions about
them have no relevant new page labelled; annotation round 1 (version 2) judges them,
adds questions about two newly onboarded services and retires one about a switched-off
service; round 2 (version 3) adds second opinions and adjudicates the disagreements.

Everything is generated from the word lists and templates of goldset/demo/data/ (read by
goldset.demo.vocabulary) with `random.Random(seed)` and dated relative to REFERENCE_DATE,
never to "now", so one seed gives the same pages, labels and version hashes on every
machine and database. Nothing iterates a set or a dict keyed by something
hash-randomised, for the same reason.
"""

import html
import random
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from goldset.demo.vocabulary import (
    ALTERNATIVES,
    BODIES,
    DESIGN_STATUS,
    DOC_TYPE_WEIGHTS,
    DOC_TYPES,
    FIT,
    IMPACT,
    INTENT_WEIGHTS,
    INTENTS,
    LANG_WEIGHTS,
    LANGS,
    MECHANISMS,
    NEW_SERVICES,
    NOTES,
    PEOPLE,
    POLICIES,
    POLICY_BY_KEY,
    QUALIFIERS,
    QUERY_TEMPLATES,
    RELATED_DOC_TYPE,
    RETIRED_ON,
    RETIRED_SERVICE,
    SERVICES,
    SYMPTOM_BY_KEY,
    SYMPTOMS,
    TASK_BY_KEY,
    TASKS,
    TEAM_OF,
    TEAMS,
    TITLES,
)
from lib.formats import JsonRecord

DEFAULT_SEED = 20261101
# Page ages are measured from this instant, not from the clock, so the hash never drifts.
REFERENCE_DATE = datetime(2026, 11, 1, tzinfo=UTC)
NEW_PAGE_DAYS = 30
NEW_SINCE = REFERENCE_DATE - timedelta(days=NEW_PAGE_DAYS)
WIKI_URL = "https://wiki.example.internal"

OLD_PAGE_COUNT = 2850
NEW_RUNBOOK_COUNT = 120
NEW_OTHER_COUNT = 30
INITIAL_QUERY_COUNT = 290
# Of the spreadsheet's questions, how many ask about a subject that only a new runbook answers.
NEW_RUNBOOK_QUERY_COUNT = 25
ADDED_QUERY_COUNT = 10
REGRADED_PAIR_COUNT = 8
OVERLAP_QUERY_COUNT = 12
DISAGREEMENT_COUNT = 5
MAX_RELEVANT = 5

# A script tag a wiki macro left behind: harmless, but it must never run when a page is shown.
SCRIPT_TAG = '<script>console.log("wiki macro: table of contents")</script>'
SCRIPT_PAGE_COUNT = 6
HTML_SHARE = 0.35

# --- generated content ----------------------------------------------------------------


@dataclass(frozen=True)
class Topic:
    """What a page is about: a symptom of a service, a task on a service, or a team's policy."""

    kind: str  # "problem", "task" or "policy"
    key: str
    owner: str  # service, or team for a policy


@dataclass
class _Page:
    number: int
    doc_id: str
    lang: str
    doc_type: str
    team: str
    topic: Topic
    published: datetime
    modified: datetime
    title: str
    text: str
    url: str

    @property
    def is_new(self) -> bool:
        return self.published > NEW_SINCE


@dataclass
class _Query:
    query_id: str
    text: str
    lang: str
    intent: str
    topic: Topic
    # {page number: grade}, relevant pages first: the labels a careful annotator would give.
    grades: dict[int, int]


@dataclass(frozen=True)
class DemoJudgment:
    """One person's judgment the demo records through `judgment_record`."""

    query_id: str
    doc_id: str
    grade: int
    annotator: str
    note: str
    seconds_spent: float
    # A Judgment.Source value. The adjudicator's decisions are "adjudicated": they override
    # the pair's other grades.
    source: str = "human"


@dataclass
class DemoRound:
    """What happens between two versions: queries added, judgments recorded, queries retired."""

    note: str
    new_queries: list[JsonRecord] = field(default_factory=list)
    judgments: list[DemoJudgment] = field(default_factory=list)
    retire: list[str] = field(default_factory=list)


@dataclass
class DemoContent:
    """The whole demo, generated in memory: pages, version 1's queries and imported grades,
    and the rounds that lead to each later version."""

    pages: list[JsonRecord]
    queries: list[JsonRecord]
    qrels: dict[tuple[str, str], int]
    v1_note: str
    rounds: list[DemoRound]


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _pick(rng: random.Random, template: str | list[str]) -> str:
    return rng.choice(template) if isinstance(template, list) else template


class _Wiki:
    """Builds the pages and the questions about them; every choice comes from one rng."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.pages: list[_Page] = []
        self.titles: set[str] = set()  # membership tests only, never iterated
        self.by_topic: dict[Topic, list[int]] = {}
        self.by_owner: dict[str, list[int]] = {}
        self.by_key: dict[tuple[str, str], list[int]] = {}

    # --- pages ---

    def topic_for(self, doc_type: str, services: list[tuple[str, str, int]]) -> Topic:
        rng = self.rng
        if doc_type == "policy":
            return Topic("policy", rng.choice(POLICIES).key, rng.choice(TEAMS))
        service = rng.choices([s for s, _, _ in services], weights=[w for _, _, w in services])[0]
        if doc_type in ("runbook", "incident") or (doc_type == "faq" and rng.random() < 0.5):
            return Topic("problem", rng.choice(SYMPTOMS).key, service)
        return Topic("task", rng.choice(TASKS).key, service)

    def add_page(self, *, lang: str, doc_type: str, topic: Topic, published: datetime, modified: datetime) -> _Page:
        rng = self.rng
        number = len(self.pages) + 1
        team = topic.owner if topic.kind == "policy" else TEAM_OF[topic.owner]
        context = self._context(lang, topic, team, published)
        title = TITLES[doc_type][lang].format(**context)
        if title in self.titles:
            for qualifier in rng.sample(QUALIFIERS[lang], len(QUALIFIERS[lang])):
                if f"{title} ({qualifier})" not in self.titles:
                    title = f"{title} ({qualifier})"
                    break
            else:
                title = f"{title} ({number})"
        self.titles.add(title)

        body_key = f"faq-{topic.kind}" if doc_type == "faq" else doc_type
        blocks = [
            (kind, [_pick(rng, t) for t in template] if kind == "ul" else _pick(rng, template))
            for kind, template in BODIES[(body_key, lang)]
        ]
        is_html = rng.random() < HTML_SHARE
        text = _render(blocks, context, is_html)

        slug = topic.key if topic.kind == "policy" else f"{topic.owner}-{topic.key}"
        path = f"{team}/{doc_type}/{slug}{'' if lang == 'en' else '-' + lang}-{number:04d}"
        page = _Page(
            number=number,
            doc_id=f"wiki:{path}",
            lang=lang,
            doc_type=doc_type,
            team=team,
            topic=topic,
            published=published,
            modified=modified,
            title=title,
            text=text,
            url=f"{WIKI_URL}/{lang}/{path}",
        )
        self.pages.append(page)
        index = number - 1
        self.by_topic.setdefault(topic, []).append(index)
        self.by_owner.setdefault(topic.owner, []).append(index)
        self.by_key.setdefault((topic.kind, topic.key), []).append(index)
        return page

    def _context(self, lang: str, topic: Topic, team: str, published: datetime) -> dict[str, str]:
        rng = self.rng
        person, person2 = rng.sample(PEOPLE, 2)
        service = topic.owner if topic.kind != "policy" else ""
        n = str(rng.randint(3, 9))
        context = {
            "service": service,
            "team": team,
            "person": person,
            "person2": person2,
            "n": n,
            "date": published.strftime("%Y-%m-%d"),
            "minutes": str(rng.choice([10, 15, 20, 30, 45])),
            "dashboard": f"{service} health",
            "lock": f"`larkctl lock status {service}`",
        }
        if topic.kind == "problem":
            symptom = SYMPTOM_BY_KEY[topic.key]
            cause, other_cause = rng.sample(symptom.causes, 2)
            incident_day = published - timedelta(days=rng.randint(1, 6))
            start = rng.randint(0, 22 * 60)
            times = [start, start + rng.randint(3, 15)]
            times += [times[1] + rng.randint(10, 60), times[1] + rng.randint(70, 150)]
            context |= {
                "symptom": symptom.names[lang],
                "subject": symptom.names[lang],
                "signal": symptom.signal,
                "cause": cause,
                "other_cause": other_cause,
                "check": f"`{symptom.check.format(service=service, team=team, n=n)}`",
                "fix": f"`{symptom.fix.format(service=service, team=team, n=n)}`",
                "incident_date": incident_day.strftime("%Y-%m-%d"),
                "duration": str(times[3] - times[0]),
                "impact": IMPACT[team].format(k=rng.randint(20, 2000)),
                **{f"t{i}": f"{(minute // 60) % 24:02d}:{minute % 60:02d}" for i, minute in enumerate(times)},
            }
        elif topic.kind == "task":
            task = TASK_BY_KEY[topic.key]
            (alt1, reason1), (alt2, reason2) = rng.sample(ALTERNATIVES, 2)
            context |= {
                "task": task.phrases[lang],
                "noun": task.noun,
                "why": task.why,
                "subject": task.phrases[lang] if lang != "en" else f"how to {task.phrases['en']}",
                "command": f"`{task.command.format(service=service, team=team, n=n)}`",
                "verify": f"`{task.verify.format(service=service, team=team, n=n)}`",
                "mechanism": rng.choice(MECHANISMS),
                "status": rng.choice(DESIGN_STATUS),
                "alt1": alt1,
                "reason1": reason1,
                "alt2": alt2,
                "reason2": reason2,
            }
        else:
            policy = POLICY_BY_KEY[topic.key]
            context |= {"policy": policy.names[lang], **{f"rule{i}": rule for i, rule in enumerate(policy.rules, 1)}}
        return context

    # --- questions ---

    def question(self, *, topic: Topic, intent: str, lang: str, used_texts: set[str], prefer_new: bool = False) -> _Query | None:
        """A question about `topic` with its graded pages, or None if every phrasing is taken."""
        rng = self.rng
        templates = QUERY_TEMPLATES.get((intent, lang)) or QUERY_TEMPLATES[(intent, "en")]
        if (intent, lang) not in QUERY_TEMPLATES:
            lang = "en"
        context = self._query_context(topic, lang)
        texts = [template.format(**context) for template in rng.sample(templates, len(templates))]
        text = next((t for t in texts if t not in used_texts), None)
        if text is None:
            return None
        used_texts.add(text)
        fit = FIT[intent]
        scored = []
        for index in self.by_topic[topic]:
            page = self.pages[index]
            grade = fit.get(page.doc_type, 1)
            if page.lang != lang:
                grade -= 1
            if rng.random() < 0.12:  # an outdated or partial page
                grade -= 1
            scored.append((-max(grade, 1), -(page.is_new and prefer_new), rng.random(), page.number))
        scored.sort()
        grades = {number: -grade for grade, _, _, number in scored[:MAX_RELEVANT]}

        # The same subject on another service (or another team's policy) is related.
        related = [
            i
            for i in self.by_key[(topic.kind, topic.key)]
            if self.pages[i].topic.owner != topic.owner and self.pages[i].doc_type == RELATED_DOC_TYPE[intent]
        ]
        if related and len(grades) < MAX_RELEVANT and rng.random() < 0.3:
            grades[self.pages[rng.choice(related)].number] = 1
        # Hard negatives: the same service or team, another subject.
        others = [i for i in self.by_owner[topic.owner] if self.pages[i].topic != topic and self.pages[i].number not in grades]
        for index in rng.sample(others, min(len(others), rng.randint(1, 3))):
            grades[self.pages[index].number] = 0
        return _Query(query_id="", text=text, lang=lang, intent=intent, topic=topic, grades=grades)

    def _query_context(self, topic: Topic, lang: str) -> dict[str, str]:
        if topic.kind == "problem":
            symptom = SYMPTOM_BY_KEY[topic.key]
            return {"service": topic.owner, "symptom": symptom.names[lang], "signal": symptom.signal}
        if topic.kind == "task":
            task = TASK_BY_KEY[topic.key]
            return {"service": topic.owner, "task": task.phrases[lang], "noun": task.noun}
        return {"team": topic.owner, "policy": POLICY_BY_KEY[topic.key].names[lang]}


def _render(blocks: list[tuple[str, str | list[str]]], context: dict[str, str], is_html: bool) -> str:
    """Page text from blocks: simple HTML (<p>, <ul>, <code>) or plain text with backticks."""
    parts = []
    for kind, template in blocks:
        items = [t.format(**context) for t in template] if kind == "ul" else [template.format(**context)]
        if is_html:
            items = [re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(item, quote=False)) for item in items]
            parts.append(f"<p>{items[0]}</p>" if kind == "p" else "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")
        else:
            parts.append(items[0] if kind == "p" else "\n".join(f"- {i}" for i in items))
    return ("\n" if is_html else "\n\n").join(parts)


def _old_date(rng: random.Random) -> tuple[datetime, datetime]:
    published = REFERENCE_DATE - timedelta(seconds=rng.randint(31 * 86400, 730 * 86400))
    if rng.random() < 0.4:
        return published, published
    # Old pages still get edited, some of them last week: age slices go by publish date.
    return published, published + (REFERENCE_DATE - published) * rng.random()


def _new_date(rng: random.Random) -> tuple[datetime, datetime]:
    published = REFERENCE_DATE - timedelta(seconds=rng.randint(1 * 86400, (NEW_PAGE_DAYS - 1) * 86400))
    return published, min(REFERENCE_DATE, published + timedelta(seconds=rng.randint(0, 2 * 86400)))


def _build_pages(wiki: _Wiki) -> list[Topic]:
    """Add the old pages and the new ones; return the topics that had no runbook before
    the sprint wrote one."""
    rng = wiki.rng
    for _ in range(OLD_PAGE_COUNT):
        lang = rng.choices(LANGS, weights=LANG_WEIGHTS)[0]
        doc_type = rng.choices(DOC_TYPES, weights=DOC_TYPE_WEIGHTS["en" if lang == "en" else "other"])[0]
        published, modified = _old_date(rng)
        wiki.add_page(lang=lang, doc_type=doc_type, topic=wiki.topic_for(doc_type, SERVICES), published=published, modified=modified)

    # The runbook sprint: a runbook for each loud alert that had none, and runbooks for
    # the two services onboarded this month.
    has_runbook = {page.topic for page in wiki.pages if page.doc_type == "runbook"}
    uncovered = [
        Topic("problem", symptom.key, service)
        for service, _, _ in SERVICES
        if service != RETIRED_SERVICE
        for symptom in SYMPTOMS
        if Topic("problem", symptom.key, service) not in has_runbook
    ]
    new_service_problems = [Topic("problem", symptom.key, service) for service, _ in NEW_SERVICES for symptom in SYMPTOMS]
    sprint_size = NEW_RUNBOOK_COUNT - len(new_service_problems) - 12
    sprint = rng.sample(uncovered, min(len(uncovered), sprint_size))
    # The rest of the sprint rewrites runbooks that had gone stale.
    covered = [
        Topic("problem", symptom.key, service)
        for service, _, _ in SERVICES
        if service != RETIRED_SERVICE
        for symptom in SYMPTOMS
        if Topic("problem", symptom.key, service) in has_runbook
    ]
    rewrites = rng.sample(covered, sprint_size - len(sprint))
    runbook_topics = sprint + rewrites + new_service_problems + rng.sample(new_service_problems, 12)
    for topic in runbook_topics:
        published, modified = _new_date(rng)
        lang = rng.choices(["en", "de", "fr"], weights=[85, 10, 5])[0]
        wiki.add_page(lang=lang, doc_type="runbook", topic=topic, published=published, modified=modified)
    new_service_tasks = [Topic("task", task.key, service) for service, _ in NEW_SERVICES for task in rng.sample(TASKS, 8)]
    for count in range(NEW_OTHER_COUNT):
        if count < len(new_service_tasks):
            topic, doc_type = new_service_tasks[count], "howto"
        else:
            topic, doc_type = rng.choice(new_service_problems), "faq"
        published, modified = _new_date(rng)
        wiki.add_page(lang="en", doc_type=doc_type, topic=topic, published=published, modified=modified)
    return sprint


def _build_queries(wiki: _Wiki, sprint: list[Topic]) -> tuple[list[_Query], str, list[_Query]]:
    """The spreadsheet's questions in id order, the id of the one round 1 retires, and the
    questions round 1 adds."""
    rng = wiki.rng
    used: set[str] = set()  # membership tests only, never iterated

    # Questions whose best answer is a runbook of the sprint: the spreadsheet could only
    # label older pages for them, if any.
    queries: list[_Query] = []
    for topic in rng.sample(sprint, NEW_RUNBOOK_QUERY_COUNT):
        new_runbook = next(wiki.pages[i] for i in wiki.by_topic[topic] if wiki.pages[i].is_new)
        queries.append(wiki.question(topic=topic, intent="troubleshoot", lang=new_runbook.lang, used_texts=used, prefer_new=True))
    retired_topics = [t for t in wiki.by_topic if t.owner == RETIRED_SERVICE and t.kind == "task"]
    retired_topic = max(retired_topics, key=lambda t: (len(wiki.by_topic[t]), t.key))
    retired_query = wiki.question(topic=retired_topic, intent="howto", lang="en", used_texts=used)
    queries.append(retired_query)

    old_topics: dict[str, list[Topic]] = {"problem": [], "task": [], "policy": []}
    for topic, indexes in wiki.by_topic.items():
        if topic.owner != RETIRED_SERVICE and any(not wiki.pages[i].is_new for i in indexes):
            old_topics[topic.kind].append(topic)
    kind_of = {"troubleshoot": "problem", "howto": "task", "policy": "policy"}
    attempts = 0
    while len(queries) < INITIAL_QUERY_COUNT:
        attempts += 1
        if attempts > INITIAL_QUERY_COUNT * 20:
            raise RuntimeError("the demo vocabulary is too small for the number of queries asked")
        intent = rng.choices(INTENTS, weights=INTENT_WEIGHTS)[0]
        kind = kind_of.get(intent) or rng.choice(["problem", "task"])
        topic = rng.choice(old_topics[kind])
        old_pages = [wiki.pages[i] for i in wiki.by_topic[topic] if not wiki.pages[i].is_new]
        # Questions mostly come in the language of the pages that answer them.
        lang = rng.choice(old_pages).lang if rng.random() < 0.85 else "en"
        if intent == "lookup":
            intent = f"lookup-{kind}"
        query = wiki.question(topic=topic, intent=intent, lang=lang, used_texts=used)
        if query is not None:
            queries.append(query)
    rng.shuffle(queries)
    for number, query in enumerate(queries, start=1):
        query.query_id = f"q{number:03d}"

    # Round 1 adds questions the support team could not have asked: about the services
    # onboarded this month, which only new pages describe.
    new_services = [service for service, _ in NEW_SERVICES]
    problems = [t for t in wiki.by_topic if t.owner in new_services and t.kind == "problem"]
    tasks = [t for t in wiki.by_topic if t.owner in new_services and t.kind == "task"]
    added = []
    for topic, intent in [(t, "troubleshoot") for t in rng.sample(problems, 7)] + [(t, "howto") for t in rng.sample(tasks, 3)]:
        query = wiki.question(topic=topic, intent=intent, lang="en", used_texts=used, prefer_new=True)
        query.query_id = f"q{INITIAL_QUERY_COUNT + len(added) + 1:03d}"
        added.append(query)
    return queries, retired_query.query_id, added


def _seconds(rng: random.Random) -> float:
    return round(rng.uniform(8, 150), 1)


def demo_generate(*, seed: int = DEFAULT_SEED) -> DemoContent:
    """The demo's pages, queries, grades and annotation rounds, built in memory from `seed`.

    Deterministic: the same seed gives equal content in every process (no clock, no
    hash-ordered iteration), and so the same version hashes once loaded.
    """
    rng = random.Random(seed)
    wiki = _Wiki(rng)
    sprint = _build_pages(wiki)
    queries, retired_id, added = _build_queries(wiki, sprint)
    pages = wiki.pages

    # A few pages carry a script tag from an old wiki macro, so that sanitising is exercised.
    html_pages = [page for page in pages if page.text.startswith("<p>")]
    for page in rng.sample(html_pages, SCRIPT_PAGE_COUNT):
        page.text += "\n" + SCRIPT_TAG
    page_records = [
        JsonRecord(
            line=page.number,
            id=page.doc_id,
            title=page.title,
            text=page.text,
            url=page.url,
            metadata={
                "lang": page.lang,
                "doc_type": page.doc_type,
                "team": page.team,
                **({"service": page.topic.owner} if page.topic.kind != "policy" else {}),
                "published_at": _iso(page.published),
                "modified_at": _iso(page.modified),
            },
        )
        for page in pages
    ]

    def doc(number: int) -> _Page:
        return pages[number - 1]

    def query_record(position: int, query: _Query) -> JsonRecord:
        return JsonRecord(
            line=position, id=query.query_id, text=query.text, metadata={"lang": query.lang, "intent": query.intent.split("-")[0]}
        )

    # Version 1: the spreadsheet. It knows no page from the last 30 days, and a few of its
    # grades are off; round 1 corrects them.
    qrels: dict[tuple[str, str], int] = {}
    for query in queries:
        for number, grade in query.grades.items():
            if not doc(number).is_new:
                qrels[(query.query_id, doc(number).doc_id)] = grade
    # Over-rating a non-relevant page is only a mistake worth showing where it does not
    # push the query past MAX_RELEVANT relevant pages.
    spreadsheet_pairs = [
        (q.query_id, number, grade)
        for q in queries
        if q.query_id != retired_id
        for number, grade in q.grades.items()
        if not doc(number).is_new and (grade > 0 or sum(g > 0 for g in q.grades.values()) < MAX_RELEVANT)
    ]
    regraded = rng.sample(spreadsheet_pairs, REGRADED_PAIR_COUNT)
    for query_id, number, grade in regraded:
        qrels[(query_id, doc(number).doc_id)] = rng.choice([g for g in range(4) if g != grade and abs(g - grade) <= 2])

    new_pairs = [(q, number, grade) for q in queries for number, grade in q.grades.items() if doc(number).is_new]
    round1 = DemoRound(note="", new_queries=[query_record(i, q) for i, q in enumerate(added, start=1)], retire=[retired_id])
    for query, number, grade in new_pairs:
        page = doc(number)
        note = f"New {page.doc_type} (published {page.published:%Y-%m-%d}). {rng.choice(NOTES[grade])}" if rng.random() < 0.7 else ""
        round1.judgments.append(DemoJudgment(query.query_id, page.doc_id, grade, "annotator", note, _seconds(rng)))
    for query_id, number, grade in regraded:
        old = qrels[(query_id, doc(number).doc_id)]
        reason = "The spreadsheet under-rated it." if grade > old else "The spreadsheet over-rated it."
        round1.judgments.append(
            DemoJudgment(
                query_id,
                doc(number).doc_id,
                grade,
                "annotator",
                f"Regraded from {old}: {reason} {rng.choice(NOTES[grade])}",
                _seconds(rng),
            )
        )
    for query in added:
        for number, grade in query.grades.items():
            note = rng.choice(NOTES[grade]) if rng.random() < 0.5 else ""
            round1.judgments.append(DemoJudgment(query.query_id, doc(number).doc_id, grade, "annotator2", note, _seconds(rng)))
    new_labelled = len(
        {doc(number).doc_id for _, number, _ in new_pairs} | {doc(n).doc_id for q in added for n in q.grades if doc(n).is_new}
    )
    round1.note = (
        f"annotation round 1: new runbooks judged. {len(new_pairs)} pairs on pages published in the last {NEW_PAGE_DAYS} days "
        f"judged for the spreadsheet's queries; {REGRADED_PAIR_COUNT} imported grades corrected; {ADDED_QUERY_COUNT} queries "
        f"added about the services onboarded this month ({added[0].query_id}-{added[-1].query_id}); {new_labelled} new pages "
        f"now labelled; {retired_id} retired ({RETIRED_SERVICE} was switched off on {RETIRED_ON})."
    )

    # Round 2: a second annotator judges some queries again; the adjudicator settles the
    # pairs where the two disagree, siding with the second opinion on the first few.
    round2 = DemoRound(note="")
    overlap = rng.sample([q for q in queries if q.query_id != retired_id and len(q.grades) >= 3], OVERLAP_QUERY_COUNT)
    overlap.sort(key=lambda q: q.query_id)
    relevant = [(q, n) for q in overlap for n, g in q.grades.items() if g >= 1]
    disputed = rng.sample(relevant, DISAGREEMENT_COUNT)
    disputed_keys = {(q.query_id, n) for q, n in disputed}
    second: dict[tuple[str, int], int] = {}
    for query in overlap:
        for number, grade in query.grades.items():
            if (query.query_id, number) in disputed_keys:
                grade = {3: 2, 1: 2}.get(grade) or rng.choice([1, 3])
                note = "I read it differently: see the steps' environment."
            else:
                note = ""
            second[(query.query_id, number)] = grade
            round2.judgments.append(DemoJudgment(query.query_id, doc(number).doc_id, grade, "annotator2", note, _seconds(rng)))
    changed = 0
    for position, (query, number) in enumerate(sorted(disputed, key=lambda pair: (pair[0].query_id, pair[1]))):
        first, other = query.grades[number], second[(query.query_id, number)]
        decided = other if position < 3 else first
        changed += decided != first
        reason = "second opinion holds" if decided == other else "first grade holds"
        round2.judgments.append(
            DemoJudgment(
                query.query_id,
                doc(number).doc_id,
                decided,
                "adjudicator",
                f"Adjudicated {first} vs {other}: {reason}. {rng.choice(NOTES[decided])}",
                _seconds(rng),
                "adjudicated",
            )
        )
    # The first annotator gives second opinions too, so that agreement compares two people:
    # on every disputed pair (the disputes become theirs, which the adjudicator settled) and
    # on every pair of the first half of the overlap queries, where on some pairs they lean
    # one grade higher. The lower median keeps annotator2's grade there, so no label moves;
    # a 0 against a 1 is left for the adjudicator. A generator of its own, so the draws
    # above, and the versions' hashes, stay as they were.
    lenient = random.Random(seed + 1)
    first_half = {query.query_id for query in overlap[: OVERLAP_QUERY_COUNT // 2]}
    for query in overlap:
        for number, grade in query.grades.items():
            key = (query.query_id, number)
            if key in disputed_keys:
                mine, note = grade, "Fits the guidelines' example for this symptom."
            elif query.query_id not in first_half:
                continue
            elif second[key] < 3 and lenient.random() < 0.25:
                mine, note = second[key] + 1, "Borderline: I lean one grade higher."
            else:
                mine, note = second[key], ""
            round2.judgments.append(DemoJudgment(query.query_id, doc(number).doc_id, mine, "annotator", note, _seconds(lenient)))
    round2.note = (
        f"annotation round 2: second opinions on {OVERLAP_QUERY_COUNT} queries by annotator2; "
        f"{DISAGREEMENT_COUNT} disagreements adjudicated, {changed} grades changed."
    )

    v1_note = (
        f"initial labels imported from the support team's spreadsheet: {len(queries)} queries, {len(qrels)} judged pairs. "
        f"It predates the runbooks of the last {NEW_PAGE_DAYS} days, so none of them is labelled yet."
    )
    return DemoContent(
        pages=page_records,
        queries=[query_record(i, q) for i, q in enumerate(queries, start=1)],
        qrels=qrels,
        v1_note=v1_note,
        rounds=[round1, round2],
    )


def pages_dates_move(pages: list[JsonRecord], shift: timedelta) -> None:
    """Move every page's published_at and modified_at (ISO strings in its metadata) by `shift`."""
    if not shift:
        return
    for record in pages:
        for name in ("published_at", "modified_at"):
            value = record.metadata.get(name)
            if value:
                record.metadata[name] = (datetime.fromisoformat(value) + shift).isoformat()
