"""The experiment state machine as a Mermaid `stateDiagram-v2`, drawn from the service's table.

`services.experiments.ALLOWED_FROM` (from where) and `LEADS_TO` (to where) are the one source:
`python -m expconsole_tools.state_diagram` prints the fenced block a Markdown page pastes, and
tests/unit/test_state_diagram.py holds every such block of README.md and docs/ to it.
"""

from __future__ import annotations

from expconsole.services.experiments import (
    ALLOWED_FROM,
    ARCHIVED_FROM,
    DELETED,
    LEADS_TO,
    NEW_EXPERIMENT,
    UNCHANGED,
)

CREATED = "setup"  # the state of a new experiment (create, restart_as_new)
START = END = "[*]"


def entered_states() -> list[str]:
    """The states an experiment can be in, in lifecycle order: the created state, then each state
    an action leads to. `experiment_stopped` and `assignment_stopped` are allowed-from statuses
    that no action enters, so the diagram leaves them out."""
    states = [CREATED]
    for to in LEADS_TO.values():
        if to not in (ARCHIVED_FROM, NEW_EXPERIMENT, DELETED, UNCHANGED, *states):
            states.append(to)
    return states


def moves() -> list[tuple[str, str, str]]:
    """(from, to, label) of every move the table allows between entered states, in table order."""
    states = entered_states()
    entry = " / ".join(["create", *(a for a, to in LEADS_TO.items() if to == NEW_EXPERIMENT)])
    out = [(START, CREATED, entry)]
    for action, to in LEADS_TO.items():
        if to in (UNCHANGED, NEW_EXPERIMENT):
            continue
        for state in (s for s in states if s in ALLOWED_FROM[action]):
            if to == ARCHIVED_FROM:
                out += [
                    (state, back, f"{action} (was {back})")
                    for back in states
                    if back in ALLOWED_FROM["archive"]
                ]
            elif to == DELETED:
                out.append((state, END, action))
            else:
                out.append((state, to, action))
    return out


def experiment_state_diagram() -> str:
    """The body of a ```mermaid block (without the fences), one move a line."""
    lines = ["stateDiagram-v2", *(f"    {src} --> {dst}: {label}" for src, dst, label in moves())]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print("```mermaid\n" + experiment_state_diagram() + "```")
