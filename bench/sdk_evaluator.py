"""Our Statsig spec evaluator's µs per check beside the real SDKs' local evaluation, same specs.

A synthetic v1 document of `--gates` gates (every condition type and operator of the functional
tests, in turn, each with a rollout rule), `--experiments` experiments (holdout and targeting
rules, three groups) and `--configs` dynamic configs (a targeted rule, two variants) is served
from a loopback server to `statsig` (pure Python) and `statsig-python-core` (Rust core), and
the same `--users` users are checked against the same specs by all three in this process:

- ours: `Evaluator.check_gate` / `get_experiment` / `get_config` (users normalised per call,
  as a route handler would);
- statsig: `StatsigServer.get_feature_gate(..., log_exposure=False)` and friends (its public
  API, error boundary included);
- core: `Statsig.get_feature_gate` with exposure logging disabled.

Every answer is compared (value and rule id) as it is timed, so a fast wrong answer cannot pass
for a result. Prints figures and ratios to the pure SDK; asserts nothing about time.

    .venv/bin/python bench/sdk_evaluator.py                 # 1,000 gates, 200 experiments, 50 configs
    .venv/bin/python bench/sdk_evaluator.py --users 2000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "core")]

from expconsole.services.sdk.evaluator import Evaluator, id_list_hash  # noqa: E402
from tests.functional import sdk_specs as specs  # noqa: E402
from tests.functional.sdk_loopback import core_sdk, loopback, pure_sdk  # noqa: E402
from tests.functional.test_sdk_evaluator import _core_user, _pure_user  # noqa: E402

GROUP_VALUES = [{"v": 1}, {"v": 2}, {"v": 3}]


def document(gates: int, experiments: int, configs: int) -> dict[str, Any]:
    """Many specs from the functional tests' building blocks (referenced gates kept by name)."""
    base = specs.main_document()
    conditions = list(specs.GATE_CONDITIONS.items())
    doc_gates = list(base["feature_gates"])
    for index in range(gates):
        _key, condition = conditions[index % len(conditions)]
        doc_gates.append(
            specs.spec(
                f"bench_gate_{index}",
                "feature_gate",
                [
                    specs.rule(f"bench_r_{index}", [condition], 100),
                    specs.rule(f"bench_roll_{index}", [specs.PUBLIC], 25),
                ],
            )
        )
    doc_configs = list(base["dynamic_configs"])
    for index in range(experiments):
        name = f"bench_exp_{index}"
        doc_configs.append(
            specs.spec(
                name,
                "experiment",
                [
                    specs.rule(f"{name}_holdout", [specs.cond("pass_gate", None, "holdout_q4")], 0, {"v": 0}),
                    specs.rule(
                        f"{name}_targeting", [specs.cond("fail_gate", None, "g_email_ends")], 0, {"v": 0}
                    ),
                    *specs._group_rules(
                        name, f"salt-{name}", [340, 330, 330], [{"v": 1}, {"v": 2}, {"v": 3}]
                    ),
                ],
                {"v": 0},
                kind="dynamic_config",
                isActive=True,
            )
        )
    for index in range(configs):
        name = f"bench_config_{index}"
        bucket = specs.cond("user_bucket", "lt", 500, salt=f"salt-{name}-variants")
        doc_configs.append(
            specs.spec(
                name,
                "dynamic_config",
                [
                    specs.rule(f"{name}_vip", [specs.GATE_CONDITIONS["plan_eq"]], 100, {"limit": 100}),
                    specs.rule(f"{name}_a", [bucket], 100, {"limit": 20}),
                ],
                {"limit": 10},
                kind="dynamic_config",
            )
        )
    return {**base, "feature_gates": doc_gates, "dynamic_configs": doc_configs}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gates", type=int, default=1000)
    parser.add_argument("--experiments", type=int, default=200)
    parser.add_argument("--configs", type=int, default=50)
    parser.add_argument("--users", type=int, default=300)
    args = parser.parse_args()

    doc = document(args.gates, args.experiments, args.configs)
    started = time.perf_counter()
    evaluator = Evaluator(
        doc, {name: {id_list_hash(member) for member in members} for name, members in specs.ID_LISTS.items()}
    )
    compile_ms = (time.perf_counter() - started) * 1000
    population = specs.users(args.users, seed=3)
    gate_names = [spec["name"] for spec in doc["feature_gates"] if spec["name"].startswith("bench_gate_")]
    experiment_names = [
        spec["name"] for spec in doc["dynamic_configs"] if spec["name"].startswith("bench_exp_")
    ]
    config_names = [
        spec["name"] for spec in doc["dynamic_configs"] if spec["name"].startswith("bench_config_")
    ]
    print(
        f"document: {len(doc['feature_gates'])} gates, {len(doc['dynamic_configs'])} configs/experiments; "
        f"Evaluator built in {compile_ms:.1f} ms; {args.users} users"
    )

    from statsig_python_core import (
        DynamicConfigEvaluationOptions,
        ExperimentEvaluationOptions,
        FeatureGateEvaluationOptions,
    )

    with loopback(doc, specs.ID_LISTS) as (base, _state), pure_sdk(base) as pure, core_sdk(base) as core:
        gate_options = FeatureGateEvaluationOptions(disable_exposure_logging=True)
        experiment_options = ExperimentEvaluationOptions(disable_exposure_logging=True)
        config_options = DynamicConfigEvaluationOptions(disable_exposure_logging=True)
        pure_users = [_pure_user(user) for user in population]
        core_users = [_core_user(user) for user in population]
        # Warm every parser cache (user agents, regexes) in all three before timing.
        for index, user in enumerate(population[:50]):
            for name in gate_names[:60]:
                evaluator.check_gate(user, name)
                pure.get_feature_gate(pure_users[index], name, log_exposure=False)
                core.get_feature_gate(core_users[index], name, gate_options)

        kinds = [
            (
                "gate",
                gate_names,
                lambda u, n: _pair(evaluator.check_gate(u, n)),
                lambda u, n: _pair(pure.get_feature_gate(u, n, log_exposure=False)),
                lambda u, n: _pair(core.get_feature_gate(u, n, gate_options)),
            ),
            (
                "experiment",
                experiment_names,
                lambda u, n: _pair(evaluator.get_experiment(u, n)),
                lambda u, n: _pair(pure.get_experiment(u, n, log_exposure=False)),
                lambda u, n: _pair(core.get_experiment(u, n, experiment_options)),
            ),
            (
                "config",
                config_names,
                lambda u, n: _pair(evaluator.get_config(u, n)),
                lambda u, n: _pair(pure.get_config(u, n, log_exposure=False)),
                lambda u, n: _pair(core.get_dynamic_config(u, n, config_options)),
            ),
        ]
        header = ("check", "checks", "ours µs", "statsig µs", "core µs", "ours/statsig")
        print("{:<11} {:>8} {:>9} {:>11} {:>9} {:>13}".format(*header))
        for kind, names, ours_fn, pure_fn, core_fn in kinds:
            ours_answers, ours_s = _timed(ours_fn, population, names)
            pure_answers, pure_s = _timed(pure_fn, pure_users, names)
            core_answers, core_s = _timed(core_fn, core_users, names)
            if ours_answers != pure_answers or ours_answers != core_answers:
                raise SystemExit(f"{kind}: answers differ between the evaluators")
            checks = len(ours_answers)
            print(
                f"{kind:<11} {checks:>8} {ours_s / checks * 1e6:>9.1f} {pure_s / checks * 1e6:>11.1f} "
                f"{core_s / checks * 1e6:>9.1f} {ours_s / pure_s:>13.2f}"
            )


def _named(items: list[dict[str, Any]], prefix: str) -> list[str]:
    return [item["name"] for item in items if item["name"].startswith(prefix)]


def _pair(result: Any) -> tuple[Any, str]:
    return result.value, result.rule_id


def _timed(check: Any, population: list[Any], names: list[str]) -> tuple[list[tuple[Any, str]], float]:
    answers = []
    started = time.perf_counter()
    for user in population:
        for name in names:
            answers.append(check(user, name))
    return answers, time.perf_counter() - started


if __name__ == "__main__":
    main()
