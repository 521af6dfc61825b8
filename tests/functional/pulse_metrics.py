"""The metric catalogue of the pulse tests: one of each type and criterion kind, on the events
view, cart, purchase and search.

Without numpy (and any other import of the pulse tests), so that `pulse_load_process.py` can load
it in an interpreter whose `sys.modules` is the thing checked.
"""

from __future__ import annotations

from typing import Any

REVENUE = {"name": "revenue", "type": "sum", "metricEvents": [{"name": "purchase"}]}
METRICS: list[dict[str, Any]] = [
    REVENUE,
    {"name": "buyers", "type": "event_user", "metricEvents": [{"name": "purchase"}]},
    {
        "name": "paid orders and searches",
        "type": "event_count_custom",
        "metricEvents": [
            {
                "name": "purchase",
                "criteria": [
                    {"type": "metadata", "column": "plan", "condition": "in", "values": ["pro", "team"]}
                ],
            },
            {"name": "search", "criteria": [{"type": "value", "condition": "in", "values": ["10", "25"]}]},
        ],
    },
    {
        "name": "big orders",
        "type": "event_count_custom",
        "metricEvents": [
            {"name": "purchase", "criteria": [{"type": "value", "condition": ">=", "values": ["30"]}]}
        ],
    },
    {
        "name": "distinct items",
        "type": "event_count_custom",
        "metricEvents": [{"name": "view", "type": "count_distinct", "metadataKey": "item"}],
    },
    {
        "name": "basket amount",
        "type": "sum",
        "metricEvents": [{"name": "cart", "type": "metadata", "metadataKey": "amount"}],
    },
    {
        "name": "engagement",
        "type": "composite_sum",
        "metricComponentMetrics": [
            {"name": "revenue", "type": "sum"},
            {"name": "view", "type": "event_count"},
        ],
    },
    {
        "name": "revenue per view",
        "type": "ratio",
        "metricComponentMetrics": [
            {"name": "revenue", "type": "sum"},
            {"name": "view", "type": "event_count"},
        ],
    },
    {
        "name": "checkout sessions",
        "type": "funnel",
        "funnelEventList": [{"name": n, "type": "event_count"} for n in ("view", "cart", "purchase")],
        "funnelCountDistinct": "events",
    },
    {
        "name": "checkout users",
        "type": "funnel",
        "funnelEventList": [{"name": n, "type": "event_count"} for n in ("view", "cart", "purchase")],
        "funnelCountDistinct": "users",
    },
]
