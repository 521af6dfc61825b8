"""End-to-end tests of a gate's rule endpoints: read, add one, add several, update by id,
update one, delete one, and the conditions a rule accepts.

Helpers and the `console` fixture come from `test_gates.py` beside this file.

Only what needs the server stays here (a happy path, an error, keys, concurrency, the workflows);
the validation, edge and list cases run in process in `tests/functional/test_gates_rules_api.py`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import requests
from test_gates import GATES, KEY_HEADER, Console, console, country, rule

from tests.functional.test_gates_rules_api import read_rules, summary

__all__ = ["console"]  # the fixture, re-exported so that pytest finds it in this module


def test_add_one_rule_appends_it_with_new_ids(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country(), name="existing")])
    resp = console.post(f"{GATES}/{gate['id']}/rule", json=rule(20, country("DE"), name="added"))
    assert resp.status_code == 200, resp.text
    updated = resp.json()["data"]
    assert updated["version"] == gate["version"] + 1
    assert summary(updated["rules"]) == [("existing", 50), ("added", 20)]
    assert updated["rules"][0] == gate["rules"][0]
    added = updated["rules"][1]
    assert added["conditions"] == [country("DE")]
    assert added["id"] and added["baseID"]
    assert added["id"] != gate["rules"][0]["id"]
    assert read_rules(console, gate["id"]) == updated["rules"]


def test_parallel_rule_additions_are_all_kept(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country(), name="base")])
    url = f"{console.url}{GATES}/{gate['id']}/rule"

    def add(i: int) -> tuple[int, requests.Response]:
        body = rule(i, name=f"added {i}")
        return i, requests.post(url, json=body, headers={KEY_HEADER: console.key}, timeout=60)

    with ThreadPoolExecutor(max_workers=10) as pool:
        results = list(pool.map(add, range(1, 11)))
    unexpected = [(r.status_code, r.text) for _, r in results if r.status_code not in (200, 409)]
    assert not unexpected, unexpected
    added = sorted(i for i, r in results if r.status_code == 200)
    assert added, "no rule was added"
    final = console.gate(gate["id"])
    assert final["version"] == 1 + len(added)
    assert sorted(r["passPercentage"] for r in final["rules"][1:]) == added
    assert final["rules"][0] == gate["rules"][0]
