"""Entity kinds: the `<KIND>` of `<KIND>#<id>` keys, and their names in messages and links."""

from __future__ import annotations

GATE = "GATE"
EXPERIMENT = "EXPERIMENT"
DYNAMIC_CONFIG = "DYNAMIC_CONFIG"
HOLDOUT = "HOLDOUT"
RELEASE_PIPELINE = "RELEASE_PIPELINE"
SEGMENT = "SEGMENT"
LAYER = "LAYER"
METRIC = "METRIC"
QUALIFYING_EVENT = "QUALIFYING_EVENT"
ASSIGNMENT_SOURCE = "ASSIGNMENT_SOURCE"
PROMPT = "PROMPT"

LABEL = {
    GATE: "Gate",
    EXPERIMENT: "Experiment",
    DYNAMIC_CONFIG: "Dynamic config",
    HOLDOUT: "Holdout",
    RELEASE_PIPELINE: "Release pipeline",
    SEGMENT: "Segment",
    LAYER: "Layer",
    METRIC: "Metric",
    QUALIFYING_EVENT: "Qualifying event source",
    ASSIGNMENT_SOURCE: "Assignment source",
    PROMPT: "Prompt",
}

PATH = {
    GATE: "gates",
    EXPERIMENT: "experiments",
    DYNAMIC_CONFIG: "dynamic_configs",
    HOLDOUT: "holdouts",
    RELEASE_PIPELINE: "release_pipelines",
    SEGMENT: "segments",
    LAYER: "layers",
    METRIC: "metrics",
    QUALIFYING_EVENT: "experiments/qualifying_events",
    ASSIGNMENT_SOURCE: "experiments/assignment_source",
    PROMPT: "prompts",
}
