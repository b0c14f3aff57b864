"""The client's calls about generated answers: a query's reference answer (read, set, remove)
and oracle experiments (start, follow, continue, read their answers). GoldsetClient takes them
in as a base class."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

from goldset_client.api_types import EndpointDepthAsk, GeneratedAnswer, OracleExperiment, ReferenceAnswer
from goldset_client.paths import set_path

if TYPE_CHECKING:
    from goldset_client.http import Transport


def answer_path(slug: str, query_id: str) -> str:
    return set_path(slug) + f"queries/{quote(query_id, safe='')}/answer"


def limits(budget_dollars: str | Decimal | None, max_requests: int | None) -> dict[str, Any]:
    """An experiment's spending limits as the API takes them; none given is no limit. Dollars
    go as a decimal string so no float rounding reaches the budget."""
    return {"budget_dollars": None if budget_dollars is None else str(budget_dollars), "max_requests": max_requests}


class AnswerCalls:
    http: Transport

    # --- reference answers --------------------------------------------------------------

    def reference_answer(self, slug: str, query_id: str) -> ReferenceAnswer:
        """The query's reference answer now (GoldsetAPIError 404 when it has none)."""
        return cast("ReferenceAnswer", self.http.get_json(answer_path(slug, query_id)))

    def set_reference_answer(
        self, slug: str, query_id: str, answer: str, *, aliases: Sequence[str] = (), key_facts: Sequence[str] = ()
    ) -> ReferenceAnswer:
        """Set the query's reference answer whole (a write token of a manager); the next published version freezes it."""
        body = {"answer": answer, "aliases": list(aliases), "key_facts": list(key_facts)}
        return cast("ReferenceAnswer", self.http.request("PUT", answer_path(slug, query_id), body=lambda: {"json": body}).json())

    def delete_reference_answer(self, slug: str, query_id: str) -> None:
        """Remove the query's reference answer (a write token of a manager)."""
        self.http.request("DELETE", answer_path(slug, query_id), ok=(204,))

    # --- oracle experiments -------------------------------------------------------------

    def oracle_experiments(self, slug: str) -> list[OracleExperiment]:
        """The set's oracle experiments, newest first, with their progress."""
        return cast("list[OracleExperiment]", self.http.paged(set_path(slug) + "oracle-experiments/"))

    def start_oracle_experiment(
        self,
        slug: str,
        *,
        run_id: int,
        generator: str,
        version: int | None = None,
        judge: str | None = None,
        closed_book: bool = False,
        sample_size: int | None = None,
        seed: int = 0,
        budget_dollars: str | Decimal | None = None,
        max_requests: int | None = None,
        k_sweep: Sequence[int] = (),
    ) -> OracleExperiment:
        """Start an oracle experiment (a write token of a manager): `generator` answers each
        query from the run's contexts; a worker runs it after the answer (202). `k_sweep`
        makes it a sweep job: the retrieved context answered also at each of those k."""
        body: dict[str, Any] = {"run_id": run_id, "generator": generator, "closed_book": closed_book, "seed": seed}
        if k_sweep:
            body["k_sweep"] = [int(k) for k in k_sweep]
        body |= {k: v for k, v in {"version": version, "judge": judge, "sample_size": sample_size}.items() if v is not None}
        body |= {k: v for k, v in limits(budget_dollars, max_requests).items() if v is not None}
        path = set_path(slug) + "oracle-experiments/"
        return cast("OracleExperiment", self.http.request("POST", path, body=lambda: {"json": body}, ok=(202,)).json())

    def oracle_experiment(self, slug: str, experiment_id: int) -> dict[str, Any]:
        """One experiment with its progress, counts and report (the schema leaves its shape open)."""
        return cast("dict[str, Any]", self.http.get_json(set_path(slug) + f"oracle-experiments/{int(experiment_id)}/"))

    def oracle_experiment_answers(self, slug: str, experiment_id: int) -> list[GeneratedAnswer]:
        """Every answer of the experiment, by query and context, with exact match, token F1 and the judge's grade."""
        return cast("list[GeneratedAnswer]", self.http.paged(set_path(slug) + f"oracle-experiments/{int(experiment_id)}/answers/"))

    def continue_oracle_experiment(
        self, slug: str, experiment_id: int, *, budget_dollars: str | Decimal | None = None, max_requests: int | None = None
    ) -> OracleExperiment:
        """Queue a stopped, failed or done experiment again with this budget (none: unbounded);
        it answers only what is missing."""
        body = limits(budget_dollars, max_requests)
        path = set_path(slug) + f"oracle-experiments/{int(experiment_id)}/continue/"
        return cast("OracleExperiment", self.http.request("POST", path, body=lambda: {"json": body}, ok=(202,)).json())

    def ask_endpoint_at_depth(self, slug: str, endpoint: str, depth: int) -> EndpointDepthAsk:
        """Ask `endpoint` every query of the latest version once at `depth` (a write token of
        a manager; 202, a worker asks): its run is what the depth-and-cost sweep reads."""
        body = {"endpoint": endpoint, "depth": int(depth)}
        path = set_path(slug) + "depth-asks/"
        return cast("EndpointDepthAsk", self.http.request("POST", path, body=lambda: {"json": body}, ok=(202,)).json())

    def depth_ask(self, slug: str, ask_id: int) -> EndpointDepthAsk:
        """One depth ask: its progress, and its run (`run_id`) once done."""
        return cast("EndpointDepthAsk", self.http.get_json(set_path(slug) + f"depth-asks/{int(ask_id)}/"))
