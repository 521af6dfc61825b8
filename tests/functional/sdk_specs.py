"""Hand-built Statsig v1 spec documents and varied users, for judging our evaluator by the SDKs.

`main_document()` uses every condition type and operator the SDK supports, in the shapes the
console's spec builder produces (gates with rollouts, segments, holdouts, dynamic configs with
variants, experiments with groups by `user_bucket`, a layer delegating to two experiments,
disabled and inactive specs, environment tiers, id-list segments). `edge_document()` holds the
inputs on which the SDKs' error paths decide (bad regex, `gt` on text, unknown operator).
"""

from __future__ import annotations

import random
from typing import Any

APP_ID = "app-web"
ID_LISTS = {
    "vip_users": [f"user-{i}" for i in range(0, 10_000, 7)],
    "vip_companies": ["c3", "c5", "c8"],
}
LAYER = "checkout_layer"
LAYER_EXPERIMENTS = ("layer_exp1", "layer_exp2")


def cond(
    kind: str,
    op: str | None = None,
    target: Any = None,
    field: str | None = None,
    *,
    id_type: str = "userID",
    salt: str | None = None,
) -> dict[str, Any]:
    return {
        "type": kind,
        "targetValue": target,
        "operator": op,
        "field": field,
        "additionalValues": {} if salt is None else {"salt": salt},
        "idType": id_type,
    }


PUBLIC = cond("public")


def rule(
    rule_id: str,
    conditions: list[dict[str, Any]],
    pass_percentage: float = 100,
    return_value: Any = True,
    *,
    id_type: str = "userID",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "name": rule_id,
        "id": rule_id,
        "salt": f"salt-{rule_id}",
        "passPercentage": pass_percentage,
        "conditions": conditions,
        "returnValue": return_value,
        "idType": id_type,
        **extra,
    }


def spec(
    name: str,
    entity: str,
    rules: list[dict[str, Any]],
    default: Any = False,
    *,
    enabled: bool = True,
    id_type: str = "userID",
    kind: str = "feature_gate",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "name": name,
        "type": kind,
        "entity": entity,
        "salt": f"salt-{name}",
        "enabled": enabled,
        "defaultValue": default,
        "idType": id_type,
        "rules": rules,
        **extra,
    }


# One gate per condition: every condition type x operator the SDK knows.
GATE_CONDITIONS: dict[str, dict[str, Any]] = {
    "public": PUBLIC,
    "email_any": cond("user_field", "any", ["alice@example.com", "BOB@EXAMPLE.COM"], "email"),
    "email_none": cond("user_field", "none", ["alice@example.com", "carol@corp.io"], "email"),
    "email_any_cs": cond("user_field", "any_case_sensitive", ["bob@example.com", "Dan@corp.io"], "email"),
    "email_none_cs": cond("user_field", "none_case_sensitive", ["bob@example.com"], "email"),
    "email_starts": cond("user_field", "str_starts_with_any", ["ali", "CAR"], "email"),
    "email_ends": cond("user_field", "str_ends_with_any", ["@example.com", "@Corp.io"], "email"),
    "email_contains": cond("user_field", "str_contains_any", ["test", "ob@"], "email"),
    "email_contains_none": cond("user_field", "str_contains_none", ["spam", "@corp"], "email"),
    "email_matches": cond("user_field", "str_matches", r"^[a-c][a-z]*\d*@example\.(com|org)$", "email"),
    "user_id_any": cond("user_field", "any", ["user-1", "user-42", "user-999"], "userID"),
    "plan_eq": cond("user_field", "eq", "pro", "plan"),
    "plan_neq": cond("user_field", "neq", "free", "plan"),
    "age_gt": cond("user_field", "gt", 30, "age"),
    "age_gte": cond("user_field", "gte", "30", "age"),
    "age_lt": cond("user_field", "lt", 25.5, "age"),
    "age_lte": cond("user_field", "lte", 25, "age"),
    "score_gt": cond("user_field", "gt", 0.5, "score"),
    "locale_any": cond("user_field", "any", ["en_US", "fr_FR"], "locale"),
    "country_field_any": cond("user_field", "any", ["US", "de"], "country"),
    "private_eq": cond("user_field", "eq", True, "beta_tester"),
    "app_version_gt": cond("user_field", "version_gt", "1.2.0", "appVersion"),
    "app_version_gte": cond("user_field", "version_gte", "2.0", "appVersion"),
    "app_version_lt": cond("user_field", "version_lt", "1.10.1", "appVersion"),
    "app_version_lte": cond("user_field", "version_lte", "3.0.0-beta", "appVersion"),
    "app_version_eq": cond("user_field", "version_eq", "2.1.0", "appVersion"),
    "app_version_neq": cond("user_field", "version_neq", "2.1", "appVersion"),
    "tags_any": cond("user_field", "array_contains_any", ["gold", 7], "tags"),
    "tags_none": cond("user_field", "array_contains_none", ["banned", 3], "tags"),
    "tags_all": cond("user_field", "array_contains_all", ["gold", "silver"], "tags"),
    "tags_not_all": cond("user_field", "not_array_contains_all", ["gold", 7], "tags"),
    "signup_before": cond("user_field", "before", 1_650_000_000_000, "signup"),
    "signup_after": cond("user_field", "after", 1_600_000_000_000, "signup"),
    "signup_on": cond("user_field", "on", 1_672_574_400_000, "signup"),
    "ip_country_any": cond("ip_based", "any", ["US", "GB"], "country"),
    "browser_any": cond("ua_based", "any", ["Chrome", "Firefox"], "browser_name"),
    "browser_version_gte": cond("ua_based", "version_gte", "100.0", "browser_version"),
    "os_any": cond("ua_based", "any", ["iOS", "Mac OS X", "Windows"], "os_name"),
    "os_version_lt": cond("ua_based", "version_lt", "17.0", "os_version"),
    "tier_any": cond("environment_field", "any", ["production"], "tier"),
    "tier_none": cond("environment_field", "none", ["development"], "tier"),
    "time_after": cond("current_time", "after", 1_600_000_000_000),
    "time_before": cond("current_time", "before", 1_600_000_000_000),
    "bucket_lt": cond("user_bucket", "lt", 300, salt="bucket-salt"),
    "bucket_any": cond("user_bucket", "any", list(range(0, 1000, 3)), salt="bucket-salt-2"),
    "bucket_none": cond("user_bucket", "none", list(range(100)), salt="bucket-salt-3"),
    "company_any": cond("unit_id", "any", ["c1", "c2"], id_type="companyID"),
    "company_in_list": cond("unit_id", "in_segment_list", "vip_companies", id_type="companyID"),
    "user_in_list": cond("unit_id", "in_segment_list", "vip_users"),
    "user_not_in_list": cond("unit_id", "not_in_segment_list", "vip_users"),
    "target_app_any": cond("target_app", "any", [APP_ID]),
    "target_app_none": cond("target_app", "none", [APP_ID]),
    "passes_gate": cond("pass_gate", None, "g_email_ends"),
    "fails_gate": cond("fail_gate", None, "g_age_gt"),
    "passes_segment": cond("pass_gate", None, "segment:vips"),
    "fails_segment": cond("fail_gate", None, "segment:rule_based"),
    "holdout_fail": cond("fail_gate", None, "holdout_q4"),
}


def _gates() -> list[dict[str, Any]]:
    gates = [
        spec(
            f"g_{key}",
            "feature_gate",
            # The first matching rule decides; a 40% public rollout catches the rest.
            [
                rule(f"r_{key}", [condition], 100 if key != "public" else 55),
                rule(f"r_{key}_roll", [PUBLIC], 40),
            ],
        )
        for key, condition in GATE_CONDITIONS.items()
    ]
    gates += [
        spec("rollout_30", "feature_gate", [rule("r_rollout_30", [PUBLIC], 30)]),
        spec(
            "company_rollout",
            "feature_gate",
            [rule("r_company_rollout", [PUBLIC], 50, id_type="companyID")],
            id_type="companyID",
        ),
        # Every condition of a rule runs: the gate conditions record exposures even after a miss.
        spec(
            "combined",
            "feature_gate",
            [
                rule(
                    "r_combined",
                    [
                        GATE_CONDITIONS["age_gt"],
                        cond("pass_gate", None, "g_email_ends"),
                        cond("fail_gate", None, "segment:vips"),
                        GATE_CONDITIONS["browser_any"],
                    ],
                    75,
                )
            ],
        ),
        spec("segment:vips", "segment", [rule("r_seg_vips", [GATE_CONDITIONS["user_in_list"]])]),
        spec("segment:rule_based", "segment", [rule("r_seg_rules", [GATE_CONDITIONS["email_ends"]])]),
        spec("holdout_q4", "holdout", [rule("holdout_q4_rule", [PUBLIC], 10)]),
        spec("launched_gate", "feature_gate", [rule("launchedGroup", [PUBLIC], 100)]),
        spec("disabled_gate", "feature_gate", [rule("r_disabled", [PUBLIC], 100)], enabled=False),
        spec("empty_gate", "feature_gate", []),
    ]
    return gates


def _group_rules(
    prefix: str, salt: str, sizes: list[int], values: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Experiment groups: cumulative `user_bucket lt` bounds on the experiment's salt."""
    rules, bound = [], 0
    for index, (size, value) in enumerate(zip(sizes, values, strict=True)):
        bound += size
        rules.append(
            rule(
                f"{prefix}_group{index}",
                [cond("user_bucket", "lt", bound, salt=salt)],
                100,
                value,
                groupName=f"Group {index}",
                isExperimentGroup=True,
            )
        )
    return rules


def _configs() -> list[dict[str, Any]]:
    variants = [{"price": 10, "label": "a"}, {"price": 11, "label": "b"}, {"price": 12, "label": "c"}]
    configs = [
        spec(
            "pricing",
            "dynamic_config",
            [
                rule("r_pricing_vip", [GATE_CONDITIONS["email_ends"]], 100, {"price": 9, "label": "vip"}),
                rule(
                    "r_pricing_variant_a",
                    [cond("user_bucket", "lt", 400, salt="salt-pricing-variants")],
                    100,
                    variants[0],
                ),
                rule(
                    "r_pricing_variant_b",
                    [cond("user_bucket", "lt", 700, salt="salt-pricing-variants")],
                    60,
                    variants[1],
                ),
            ],
            {"price": 12, "label": "default"},
            kind="dynamic_config",
        ),
        spec(
            "company_config",
            "dynamic_config",
            [rule("r_company_config", [PUBLIC], 50, {"limit": 100}, id_type="companyID")],
            {"limit": 10},
            id_type="companyID",
            kind="dynamic_config",
        ),
        spec(
            "disabled_config",
            "dynamic_config",
            [rule("r_disabled_config", [PUBLIC], 100, {"on": True})],
            {"on": False},
            enabled=False,
            kind="dynamic_config",
        ),
    ]
    exp_values = [{"cta": "Buy"}, {"cta": "Purchase"}, {"cta": "Get it"}]
    configs.append(
        spec(
            "checkout_exp",
            "experiment",
            [
                rule("holdout_q4_rule", [cond("pass_gate", None, "holdout_q4")], 0, {"cta": "Buy"}),
                rule("targetingGate", [cond("fail_gate", None, "g_ip_country_any")], 0, {"cta": "Buy"}),
                *_group_rules("checkout_exp", "salt-checkout_exp", [340, 330, 330], exp_values),
            ],
            {"cta": "Buy"},
            kind="dynamic_config",
            isActive=True,
            hasSharedParams=False,
        )
    )
    configs.append(
        spec(
            "company_exp",
            "experiment",
            _group_rules("company_exp", "salt-company_exp", [500, 500], [{"tier": 1}, {"tier": 2}]),
            {"tier": 0},
            id_type="companyID",
            kind="dynamic_config",
            isActive=True,
        )
    )
    for rule_ in configs[-1]["rules"]:
        rule_["idType"] = "companyID"
        rule_["conditions"][0]["idType"] = "companyID"
    configs.append(
        spec(
            "paused_exp",
            "experiment",
            _group_rules("paused_exp", "salt-paused_exp", [500, 500], [{"v": 1}, {"v": 2}]),
            {"v": 0},
            kind="dynamic_config",
            isActive=False,
        )
    )
    configs.append(
        spec(
            "disabled_exp",
            "experiment",
            _group_rules("disabled_exp", "salt-disabled_exp", [500, 500], [{"v": 1}, {"v": 2}]),
            {"v": 0},
            enabled=False,
            kind="dynamic_config",
            isActive=False,
        )
    )
    # Two experiments sharing a layer: each owns a set of the layer's 1,000 buckets.
    layer_salt = f"salt-{LAYER}"
    owned = {"layer_exp1": list(range(0, 500)), "layer_exp2": list(range(500, 800))}
    explicit = {"layer_exp1": ["button_color"], "layer_exp2": ["discount"]}
    group_values = {
        "layer_exp1": [{"button_color": "blue", "discount": 0}, {"button_color": "green", "discount": 0}],
        "layer_exp2": [{"button_color": "blue", "discount": 0}, {"button_color": "blue", "discount": 15}],
    }
    for name in LAYER_EXPERIMENTS:
        configs.append(
            spec(
                name,
                "experiment",
                [
                    rule(
                        "layerAssignment", [cond("user_bucket", "none", owned[name], salt=layer_salt)], 0, {}
                    ),
                    *_group_rules(name, f"salt-{name}", [500, 500], group_values[name]),
                ],
                {"button_color": "blue", "discount": 0},
                kind="dynamic_config",
                isActive=True,
                explicitParameters=explicit[name],
                hasSharedParams=True,
            )
        )
    return configs


def _layers() -> list[dict[str, Any]]:
    salt = f"salt-{LAYER}"
    return [
        spec(
            LAYER,
            "layer",
            [
                rule(
                    "alloc_layer_exp1",
                    [cond("user_bucket", "any", list(range(0, 500)), salt=salt)],
                    100,
                    {},
                    configDelegate="layer_exp1",
                ),
                rule(
                    "alloc_layer_exp2",
                    [cond("user_bucket", "any", list(range(500, 800)), salt=salt)],
                    100,
                    {},
                    configDelegate="layer_exp2",
                ),
            ],
            {"button_color": "blue", "discount": 0},
            kind="dynamic_config",
        ),
        spec("empty_layer", "layer", [], {"x": 1}, kind="dynamic_config"),
    ]


def main_document() -> dict[str, Any]:
    return {
        "time": 1_795_549_634_314,
        "has_updates": True,
        "default_environment": "production",
        "app_id": APP_ID,
        "feature_gates": _gates(),
        "dynamic_configs": _configs(),
        "layer_configs": _layers(),
        "layers": {LAYER: list(LAYER_EXPERIMENTS)},
    }


# Conditions the Rust core 0.24 answers differently from the pure SDK (see the tests).
CORE_DIFFERS: dict[str, dict[str, Any]] = {
    # The core does not know multi_pass_gate / multi_fail_gate: the spec is unsupported.
    "multi_pass": cond("multi_pass_gate", None, ["g_email_any", "g_age_gt"]),
    "multi_fail": cond("multi_fail_gate", None, ["g_email_ends", "g_browser_any"]),
    # Without an IP (or country) the pure SDK fails an ip_based condition; the core's `none` passes.
    "ip_country_none": cond("ip_based", "none", ["CN", "RU"], "country"),
    # A 10-digit date target is seconds to the pure SDK, milliseconds to the core.
    "signup_after_seconds": cond("user_field", "after", 1_600_000_000, "signup"),
}


def edge_document() -> dict[str, Any]:
    """Inputs where only the SDK's error handling decides (pure SDK vs our evaluator)."""
    base = main_document()
    base["feature_gates"] += [
        spec(f"g_{key}", "feature_gate", [rule(f"r_{key}", [condition]), rule(f"r_{key}_roll", [PUBLIC], 40)])
        for key, condition in CORE_DIFFERS.items()
    ]
    base["feature_gates"] += [
        spec(
            "unsupported_op",
            "feature_gate",
            [rule("r_unsupported", [cond("user_field", "weird_op", 1, "age")])],
        ),
        spec(
            "unsupported_type", "feature_gate", [rule("r_unsupported_t", [cond("quantum", "eq", 1, "age")])]
        ),
        spec("gt_on_text", "feature_gate", [rule("r_gt_text", [cond("user_field", "gt", 1, "nickname")])]),
        spec(
            "bad_regex",
            "feature_gate",
            [rule("r_bad_regex", [cond("user_field", "str_matches", "([a-", "email")])],
        ),
        spec(
            "missing_ref", "feature_gate", [rule("r_missing_ref", [PUBLIC, cond("pass_gate", None, "nope")])]
        ),
        spec(
            "tier_case",
            "feature_gate",
            [rule("r_tier_case", [cond("environment_field", "any", ["prod"], "Tier")])],
        ),
        spec(
            "date_text", "feature_gate", [rule("r_date_text", [cond("user_field", "after", 1, "nickname")])]
        ),
        spec("upper_op", "feature_gate", [rule("r_upper_op", [cond("user_field", "ANY", ["pro"], "plan")])]),
        spec(
            "nested_error", "feature_gate", [rule("r_nested_error", [cond("pass_gate", None, "gt_on_text")])]
        ),
    ]
    return base


_AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 "
    "Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 "
    "Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/16.6 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (iPad; CPU OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "CriOS/120.0.6099.119 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.6045.163 "
    "Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/99.0.4844.51 "
    "Safari/537.36 Edg/99.0.1150.36",
    "Googlebot/2.1 (+http://www.google.com/bot.html)",
    "curl/8.4.0",
    "not a browser at all",
]
_IPS = [
    "8.8.8.8",
    "81.2.69.142",
    "1.2.4.8",
    "5.255.255.5",
    "200.160.2.3",
    "2.16.0.1",
    "203.0.113.9",
    "10.0.0.1",
]
_EMAIL_NAMES = ["alice", "bob", "BOB", "carol", "dan", "Dan", "tester", "spammer", "ali", "bo2"]
_DOMAINS = ["example.com", "EXAMPLE.COM", "corp.io", "example.org", "mail.net"]
_VERSIONS = [
    "1.0",
    "1.2.0",
    "1.2.1",
    "1.10.0",
    "1.10.1",
    "2.0",
    "2.1.0",
    "2.1",
    "3.0.0-beta",
    "3.0.0",
    "0.9.9",
    "10",
]


def users(count: int, seed: int = 12) -> list[dict[str, Any]]:
    """Users in the SDK's JSON shape with every attribute sometimes present, sometimes not."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        user: dict[str, Any] = {"userID": f"user-{i}"}

        def maybe(probability: float = 0.8) -> bool:
            return rng.random() < probability

        if maybe():
            user["email"] = f"{rng.choice(_EMAIL_NAMES)}@{rng.choice(_DOMAINS)}"
        if maybe(0.7):
            user["ip"] = rng.choice(_IPS)
        if maybe(0.8):
            user["userAgent"] = rng.choice(_AGENTS)
        if maybe(0.3):
            user["country"] = rng.choice(["US", "DE", "de", "FR"])
        if maybe(0.6):
            user["locale"] = rng.choice(["en_US", "fr_FR", "de_DE", "EN_us"])
        if maybe(0.7):
            user["appVersion"] = rng.choice(_VERSIONS)
        custom: dict[str, Any] = {}
        if maybe(0.7):
            custom["age"] = rng.choice(
                [rng.randint(13, 70), float(rng.randint(13, 70)) + 0.5, str(rng.randint(13, 70))]
            )
        if maybe(0.6):
            custom["plan"] = rng.choice(["pro", "free", "team", "PRO"])
        if maybe(0.5):
            custom["score"] = rng.random()
        if maybe(0.6):
            custom["tags"] = rng.sample(["gold", "silver", "banned", 7, 3, "7"], rng.randint(0, 4))
        if maybe(0.6):
            custom["signup"] = rng.choice(
                [rng.randint(1_500_000_000_000, 1_750_000_000_000), rng.randint(1_500_000_000, 1_750_000_000)]
            )
            if maybe(0.1):
                custom["signup"] = 1_672_574_400_000 + rng.randint(-3_600_000, 3_600_000)
        if maybe(0.3):
            custom["nickname"] = rng.choice(["zed", "x1"])
        if custom:
            user["custom"] = custom
        if maybe(0.2):
            user["privateAttributes"] = {"beta_tester": rng.choice([True, False])}
        if maybe(0.7):
            user["customIDs"] = {
                "companyID": f"c{rng.randint(0, 9)}",
                "stableID": f"s-{rng.randint(0, 10**6)}",
            }
        if maybe(0.6):
            user["statsigEnvironment"] = {"tier": rng.choice(["production", "staging", "development"])}
        out.append(user)
    return out
