"""Bulk import trigger: an object created under imports/date=YYYY-MM-DD/ is imported as events.

S3 sends "Object Created" to EventBridge and a rule on the imports/ prefix invokes this
function (template.yaml, ImportFunction); a classic S3 notification (`Records`) works too.
Each object is imported by expconsole.services.imports, the same code `expconsole import`
runs locally; the rules, formats and reports are documented there. A storage failure raises,
so that Lambda retries the (asynchronous) invocation: re-importing stores nothing twice.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from expconsole import observability
from expconsole.services import imports

logger = observability.logger


def handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    outcomes = imports.handle_notification(event)
    if not outcomes:
        logger.warning("No created object in this event", extra={"eventKeys": sorted(event)})
    files = []
    for outcome in outcomes:
        report = outcome.get("report") or {}
        brief = {k: report[k] for k in ("rows", "accepted", "rejected") if k in report}
        entry = {"key": outcome["key"], "status": outcome["status"], **brief}
        if outcome.get("message"):
            entry["reason"] = outcome["message"]
        files.append(entry)
        if outcome["status"] == "imported":
            logger.info("Imported", extra=entry)
        elif outcome["status"] == "skipped":
            logger.debug("Skipped", extra=entry)
        else:
            logger.warning(outcome["status"].capitalize(), extra=entry)
    counts = {status: sum(f["status"] == status for f in files) for status in imports.STATUSES}
    observability.count("FilesImported", counts.get("imported", 0))
    observability.count("EventsAccepted", sum(int(f.get("accepted", 0)) for f in files))
    observability.count(
        "ImportFailures", sum(n for status, n in counts.items() if status not in ("imported", "skipped"))
    )
    return {**counts, "files": files}


lambda_handler = observability.instrument(handle, http=False)
