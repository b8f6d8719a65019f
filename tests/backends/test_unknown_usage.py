"""A token count a backend does not report is unknown end to end, never 0: in the completion,
the run record, a replayed cache line, the simulated env's info and the report's token, cost
and routing figures."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from agentworld_envs.backends import Backend, ChatRequest, Completion, Usage
from agentworld_envs.backends.replay import completion_from_dict, completion_to_dict
from agentworld_envs.backends.replies import USAGE_UNKNOWN_KEY, completion_from_reply
from agentworld_envs.cli import main
from agentworld_envs.domains import get_domain
from agentworld_envs.sim.observation import read_completion
from agentworld_envs.sim.vector_info import batch_infos, info_at
from floor_tasks.harness.agents import OracleBackend
from floor_tasks.harness.corpus_io import read_records
from floor_tasks.harness.record import RunRecord
from floor_tasks.harness.report import build_report
from floor_tasks.harness.runner import Job, run_jobs
from tests.helpers.records import record_json, synthetic_record
from tests.helpers.server import FakeOpenAIServer, Reply, chat_response


def _reply(usage: dict | None) -> dict:
    body = chat_response("ok")
    if usage is None:
        del body["usage"]
    else:
        body["usage"] = usage
    return body


@pytest.mark.parametrize(("usage", "counts"), [
    (None, (None, None, None)),
    ({"prompt_tokens": 5}, (5, None, None)),
    ({"completion_tokens": 2}, (None, 2, None)),
    ({"prompt_tokens": 5, "completion_tokens": 2}, (5, 2, 7)),
])
def test_a_count_the_reply_leaves_out_is_none_not_zero(usage: dict | None,
                                                      counts: tuple) -> None:
    read = completion_from_reply(_reply(usage), 0.1).usage
    assert (read.input_tokens, read.output_tokens, read.total_tokens) == counts
    assert read.known is (None not in counts)


def test_a_replayed_line_keeps_unknown_counts_and_old_lines_still_load() -> None:
    unknown = Completion("hi", usage=Usage(None, 3), raw={USAGE_UNKNOWN_KEY: ["prompt_tokens"]})
    again = completion_from_dict(json.loads(json.dumps(completion_to_dict(unknown))))
    assert again.usage == Usage(None, 3)
    # A line recorded while unknown counts were written as 0: its raw names them.
    old = {"text": "hi", "usage": {"input_tokens": 0, "output_tokens": 0},
           "raw": {USAGE_UNKNOWN_KEY: ["prompt_tokens", "completion_tokens"]}}
    assert completion_from_dict(old).usage == Usage(None, None)
    plain = {"text": "hi", "usage": {"input_tokens": 0, "output_tokens": 4}}
    assert completion_from_dict(plain).usage == Usage(0, 4)


class _Metered(Backend):
    """The oracle's answers, each call reporting the next of ``usages``."""

    name = "metered"

    def __init__(self, usages: Sequence[Usage]) -> None:
        self.oracle = OracleBackend()
        self.usages: Iterator[Usage] = iter(usages)

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        out = self.oracle.complete(requests)
        for completion in out:
            completion.usage = next(self.usages)
        return out


@pytest.mark.parametrize(("usages", "summed"), [
    ([Usage(100, 10), Usage(None, None)], (100, 10, 110, 1)),
    ([Usage(100, 10), Usage(50, None)], (150, 10, 160, 1)),
    ([Usage(None, 10), Usage(None, 5)], (None, 15, None, 2)),
    ([Usage(100, 10), Usage(50, 5)], (150, 15, 165, 0)),
])
def test_a_run_record_sums_the_known_counts_and_counts_the_calls_without(
        usages: list[Usage], summed: tuple) -> None:
    (record,) = run_jobs([Job("A1")], _Metered(usages))  # A1 takes two calls
    usage = record.usage
    assert record.trajectory.turns == 2
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens,
            usage.calls_without_usage) == summed
    again = RunRecord.from_json(json.loads(json.dumps(record.to_json())))
    assert again.usage == usage
    assert ("calls_without_usage" in record.to_json()["usage"]) is bool(summed[3])


def test_an_old_record_of_zeros_loads_and_is_written_back_unchanged() -> None:
    data = record_json("A1", "A", True)
    record = RunRecord.from_json(data)
    assert record.usage.known and record.usage.calls_without_usage == 0
    assert record.to_json() == data


def _with_usage(model: str, repeat: int, tokens: int | None, passed: bool = True) -> RunRecord:
    usage = ({"input_tokens": tokens, "output_tokens": tokens, "total_tokens": 2 * tokens}
             if tokens is not None else
             {"input_tokens": None, "output_tokens": None, "total_tokens": None,
              "calls_without_usage": 2})
    return synthetic_record("A1", "A", passed, model=model, repeat=repeat, usage=usage)


def test_the_report_means_only_known_tokens_and_never_routes_to_unknown_as_cheapest() -> None:
    records = [_with_usage("metered", r, 500) for r in range(3)]
    records += [_with_usage("partial", 0, 100), _with_usage("partial", 1, None),
                _with_usage("partial", 2, 300)]
    records += [_with_usage("silent", r, None) for r in range(3)]
    prices = {m: {"price_in_per_mtok": 1.0, "price_out_per_mtok": 1.0}
              for m in ("metered", "partial", "silent")}
    report = build_report(records, prices)
    metered, partial, silent = (report.usage[m] for m in ("metered", "partial", "silent"))
    assert partial.mean_total_tokens == 400 and partial.runs_without_usage == 1
    assert partial.cost_per_run == pytest.approx(400 / 1e6)
    assert silent.mean_total_tokens is None and silent.cost_per_run is None
    assert silent.runs_without_usage == 3 and metered.runs_without_usage == 0
    assert all(route.chosen == "partial" for route in report.routes)
    assert all(route.best == "partial" for route in report.routes)  # all pass: cheapest
    assert report.cost_basis == "mean total tokens; unknown for silent, ranked last"
    table = report.markdown().split("## Tokens, latency and cost")[1].split("## Routing")[0]
    row = next(line for line in table.splitlines() if line.startswith("| silent |"))
    assert row.count("unknown") == 5 and "$0" not in row and "| 0 |" not in row
    assert "(partial: 1 of 3; silent: 3 of 3)" in table


def test_a_vector_env_batches_a_step_whose_output_tokens_are_unknown() -> None:
    domain = get_domain("search")
    steps = [read_completion(domain, None, Completion(text, usage=usage), 10_000).info
             for text, usage in (("<observation>a</observation>", Usage(5, 3)),
                                 ("<observation>b</observation>", Usage(None, None)))]
    batched = batch_infos([{"world_model": info} for info in steps], 2)
    assert info_at(batched, 0)["world_model"]["output_tokens"] == 3
    assert "output_tokens" not in info_at(batched, 1)["world_model"]


def _serve(with_usage: bool) -> FakeOpenAIServer:
    def answer(hit: int, body: dict) -> Reply:
        reply = chat_response("bug", prompt_tokens=900, completion_tokens=100)
        if not with_usage:
            del reply["usage"]
        return Reply(200, reply)
    return FakeOpenAIServer(answer)


def test_floor_run_and_report_with_a_server_that_sends_no_usage(tmp_path: Path) -> None:
    with _serve(True) as metered, _serve(False) as silent, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the server without usage, named
        for name, server in (("metered", metered), ("silent", silent)):
            backend = {"name": "openai", "model": "m", "base_url": server.base_url,
                       "api_key_env": None}
            assert main(["floor", "run", "--backend", json.dumps(backend), "--name", name,
                         "--tasks", "A01", "--out", str(tmp_path / name),
                         "--no-progress"]) == 0
    (record,) = read_records(tmp_path / "silent")
    assert record.usage.input_tokens is None and record.usage.calls_without_usage == 1
    line = json.loads((tmp_path / "silent" / "runs.jsonl").read_text())
    assert line["usage"] == {"input_tokens": None, "output_tokens": None,
                             "total_tokens": None, "calls_without_usage": 1}
    sweep = tmp_path / "sweep.yaml"
    priced = "price_in_per_mtok: 1.0, price_out_per_mtok: 2.0"
    sweep.write_text(f"sweep_name: probe\ntasks: [A01]\nmodels:\n"
                     f"  - {{name: metered, backend: {{name: oracle}}, {priced}}}\n"
                     f"  - {{name: silent, backend: {{name: oracle}}, {priced}}}\n")
    assert main(["floor", "report", str(tmp_path / "metered"), str(tmp_path / "silent"),
                 "--sweep", str(sweep), "--out", str(tmp_path / "report")]) == 0
    text = (tmp_path / "report" / "report.md").read_text()
    table = text.split("## Tokens, latency and cost")[1].split("## Routing")[0]
    rows = {line.split(" | ")[0]: line for line in table.splitlines() if line.startswith("| ")}
    assert rows["| metered"].startswith("| metered | 1 | 900 | 100 | 1,000 |")
    assert rows["| silent"].startswith("| silent | 1 | unknown | unknown | unknown |")
    assert rows["| silent"].endswith("| unknown | unknown |")
    routes = [line.split(" | ") for line in text.split("## Routing")[1].splitlines()
              if line.startswith("| A0 |") or line.startswith("| overall |")]
    assert routes and all(route[3] == "metered" for route in routes)
