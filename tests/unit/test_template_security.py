"""template.yaml keeps the table and the events bucket reachable only through the functions' roles.

`sam validate --lint` (tests/unit/test_template.py) runs cfn-lint's default rules: they check
that policies are well-formed, not that they are narrow. These checks are the security side:
the bucket and the table are encrypted and private, nothing grants a wildcard principal, every
function's policy names only this stack's table and bucket with explicit actions, every route is
on the one HTTP API (no function URL or second API around it), and that API has no authorizer:
each keyed function checks the key itself (expconsole.api.auth), so its role must read key items.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from expconsole_tools.local.template import read_template

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
TABLE = "Table"
BUCKET = "EventsBucket"
# S3 actions on the bucket itself; every other S3 action is on objects (ARN `<bucket>/<key>`).
S3_BUCKET_ACTIONS = {"s3:ListBucket", "s3:GetBucketLocation", "s3:ListBucketMultipartUploads"}
ACTION = re.compile(r"^[a-z0-9-]+:[A-Za-z0-9]+$")  # service:Action, no wildcard
SECRET_NAME = re.compile(r"API_?KEY|SECRET|PASSWORD|TOKEN|CREDENTIAL", re.IGNORECASE)
# Resource types that would put a second HTTP endpoint in front of a function.
BYPASS_TYPES = ("AWS::Lambda::Url", "AWS::Serverless::Api", "AWS::ApiGateway::", "AWS::ApiGatewayV2::")

# The functions that check no key: the docs ($default, /docs, /openapi.json, /health) and the web
# console's static files. Every other function with a route checks the key itself.
KEYLESS_FUNCTIONS = {"DocsFunction", "WebFunction"}

TEMPLATE_DOC: dict[str, Any] = read_template(TEMPLATE)
RESOURCES: dict[str, dict[str, Any]] = TEMPLATE_DOC["Resources"]


def _of_type(kind: str) -> dict[str, dict[str, Any]]:
    return {name: res for name, res in RESOURCES.items() if res["Type"] == kind}


def _functions() -> dict[str, dict[str, Any]]:
    return {name: res.get("Properties") or {} for name, res in _of_type("AWS::Serverless::Function").items()}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _statements(function: str) -> list[dict[str, Any]]:
    """The function's policy statements; every policy must be an inline `Statement` document."""
    policies = _functions()[function].get("Policies") or []
    assert isinstance(policies, list), f"{function}: Policies must be a list of inline statements"
    statements = []
    for policy in policies:
        # A managed policy name (AmazonS3FullAccess) or a SAM policy template is not reviewed here.
        assert isinstance(policy, dict) and set(policy) == {"Statement"}, (
            f"{function}: policy {policy!r} is not an inline Statement document"
        )
        statements.extend(_as_list(policy["Statement"]))
    return statements


def _actions(statement: dict[str, Any]) -> list[str]:
    return [str(a) for a in _as_list(statement.get("Action", []))]


def _names_arn_of(resource: Any, logical_id: str) -> str | None:
    """What a resource names of `logical_id`'s ARN: "" for the ARN itself (`!GetAtt X.Arn`), the
    suffix for `!Sub "${X.Arn}<suffix>"` (`/index/*`, `/events/*`); None if it names something else."""
    if isinstance(resource, dict) and resource.get("Fn::GetAtt") == [logical_id, "Arn"]:
        return ""
    if isinstance(resource, dict) and isinstance(resource.get("Fn::Sub"), str):
        text = resource["Fn::Sub"]
        prefix = "${" + logical_id + ".Arn}"
        if text.startswith(prefix) and "${" not in text[len(prefix) :]:
            return text[len(prefix) :]
    return None


def _wildcard_principal(principal: Any) -> bool:
    if principal == "*":
        return True
    if isinstance(principal, dict):
        return any("*" in _as_list(value) for value in principal.values())
    return False


def _resource_policies() -> list[tuple[str, dict[str, Any]]]:
    """(resource, statement) for every resource-based policy statement in the template."""
    out = []
    for name, res in RESOURCES.items():
        props = res.get("Properties") or {}
        document = props.get("PolicyDocument") or props.get("ResourcePolicy", {}).get("PolicyDocument")
        if isinstance(document, dict):
            out.extend((name, statement) for statement in _as_list(document.get("Statement", [])))
        if res["Type"] == "AWS::Lambda::Permission":
            out.append((name, {"Effect": "Allow", "Principal": props.get("Principal")}))
    return out


def _http_routes(props: dict[str, Any]) -> list[str]:
    return [name for name, event in (props.get("Events") or {}).items() if event.get("Type") == "HttpApi"]


def gateway_authorizers(document: dict[str, Any]) -> list[str]:
    """Every place a template (source or built) has API Gateway authorize a request itself: an
    API's Auth (authorizers, a default one), a route's Auth, or an authorizer resource."""
    found = []
    for name, res in document["Resources"].items():
        props = res.get("Properties") or {}
        if res["Type"] == "AWS::ApiGatewayV2::Authorizer":
            found.append(name)
        if res["Type"] == "AWS::Serverless::HttpApi" and props.get("Auth"):
            found.append(f"{name}.Auth")
        if res["Type"] == "AWS::Serverless::Function":
            for route in _http_routes(props):
                if (props["Events"][route].get("Properties") or {}).get("Auth"):
                    found.append(f"{name}.{route}.Auth")
    return found


def keyed_functions(document: dict[str, Any]) -> set[str]:
    """The functions with an HTTP route that check its key (all but KEYLESS_FUNCTIONS)."""
    return {
        name
        for name, res in document["Resources"].items()
        if res["Type"] == "AWS::Serverless::Function"
        and _http_routes(res.get("Properties") or {})
        and name not in KEYLESS_FUNCTIONS
    }


def _is_table_arn(resource: Any) -> bool:
    """`!GetAtt Table.Arn`, in short or long form (a built template may write either)."""
    target = resource.get("Fn::GetAtt") if isinstance(resource, dict) else None
    return (target.split(".") if isinstance(target, str) else target) == [TABLE, "Arn"]


def functions_that_cannot_read_keys(document: dict[str, Any]) -> list[str]:
    """Keyed functions whose policy lacks `dynamodb:GetItem` on the table (the key item is
    `KEY#<hash>` in it): their every request would be a 500 in AWS, never locally."""
    missing = []
    for name in sorted(keyed_functions(document)):
        policies = document["Resources"][name]["Properties"].get("Policies") or []
        allowed = any(
            statement.get("Effect") == "Allow"
            and "dynamodb:GetItem" in _as_list(statement.get("Action", []))
            and any(_is_table_arn(r) for r in _as_list(statement.get("Resource")))
            for policy in policies
            if isinstance(policy, dict)
            for statement in _as_list(policy.get("Statement", []))
        )
        if not allowed:
            missing.append(name)
    return missing


# --- the events bucket and the table ------------------------------------------------------


def test_bucket_refuses_requests_without_tls() -> None:
    policies = [
        res["Properties"]
        for res in _of_type("AWS::S3::BucketPolicy").values()
        if res["Properties"]["Bucket"] == {"Ref": BUCKET}
    ]
    assert len(policies) == 1, f"{BUCKET} needs one bucket policy, found {len(policies)}"
    denies = [
        s
        for s in _as_list(policies[0]["PolicyDocument"]["Statement"])
        if s.get("Effect") == "Deny"
        and _wildcard_principal(s.get("Principal"))
        and set(_actions(s)) & {"s3:*", "*"}
        and str(((s.get("Condition") or {}).get("Bool") or {}).get("aws:SecureTransport")).lower() == "false"
    ]
    assert denies, f"{BUCKET}'s policy has no Deny of s3:* for everyone when aws:SecureTransport is false"
    covered = {_names_arn_of(r, BUCKET) for s in denies for r in _as_list(s["Resource"])}
    assert {"", "/*"} <= covered, f"the TLS deny must cover the bucket and its objects, covers {covered}"


def test_bucket_disables_acls_and_is_not_a_website() -> None:
    props = RESOURCES[BUCKET]["Properties"]
    rules = props["OwnershipControls"]["Rules"]
    assert [r["ObjectOwnership"] for r in rules] == ["BucketOwnerEnforced"], "ACLs must be disabled"
    assert "AccessControl" not in props, "a canned ACL can make the bucket public"
    assert "WebsiteConfiguration" not in props


def test_table_is_encrypted_with_point_in_time_recovery_and_no_resource_policy() -> None:
    props = RESOURCES[TABLE]["Properties"]
    assert props["SSESpecification"]["SSEEnabled"] is True
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert "ResourcePolicy" not in props, "the table is reached through the functions' roles only"


def test_no_resource_policy_allows_a_wildcard_principal() -> None:
    policies = _resource_policies()
    assert policies, "expected at least the bucket policy"
    open_to_all = [
        name for name, s in policies if s.get("Effect") == "Allow" and _wildcard_principal(s.get("Principal"))
    ]
    assert not open_to_all, f"resource policies granting everyone: {open_to_all}"


# --- the functions' roles -----------------------------------------------------------------


@pytest.mark.parametrize("function", sorted(_functions()))
def test_function_policy_names_explicit_actions_on_this_stacks_resources(function: str) -> None:
    statements = _statements(function)
    for statement in statements:
        assert not {"NotAction", "NotResource", "NotPrincipal"} & set(statement), statement
        actions, resources = _actions(statement), _as_list(statement.get("Resource"))
        assert actions and resources, f"{function}: a statement without actions or resources"
        bad = [a for a in actions if not ACTION.match(a)]
        assert not bad, f"{function}: wildcard or malformed actions {bad}"
        assert "*" not in resources, f"{function}: Resource '*' for {actions}"
        for action in actions:
            service = action.split(":")[0]
            for resource in resources:
                if service == "dynamodb":
                    suffix = _names_arn_of(resource, TABLE)
                    assert suffix in ("", "/index/*"), f"{function}: {action} on {resource}, not the table"
                elif service == "s3":
                    suffix = _names_arn_of(resource, BUCKET)
                    assert suffix is not None, f"{function}: {action} on {resource}, not the events bucket"
                    if action in S3_BUCKET_ACTIONS:
                        assert suffix == "", f"{function}: {action} is a bucket action, on {resource}"
                    else:
                        assert suffix.startswith("/") and len(suffix) > 1, (
                            f"{function}: {action} on {resource}"
                        )
                elif service == "glue" and str(resource).endswith(":catalog'}"):
                    continue  # Glue authorizes a table read on the account's catalog too
                else:
                    # Any other service: only resources of this stack (its name or its logical ids).
                    text = str(resource)
                    assert "${AWS::StackName}" in text or any(f"'{r}'" in text for r in RESOURCES), (
                        f"{function}: {action} on {resource}, which is not a resource of this stack"
                    )


def test_every_function_that_checks_keys_can_read_key_items() -> None:
    assert not functions_that_cannot_read_keys(TEMPLATE_DOC)
    assert len(keyed_functions(TEMPLATE_DOC)) > 10  # the check above looked at the real functions


# --- the API -------------------------------------------------------------------------------


def test_api_gateway_runs_no_authorizer_so_no_route_gets_its_bare_401() -> None:
    """An HTTP API with a Lambda authorizer keyed on SERVICE-API-KEY answers a request without the
    header with `401 {"message": "Unauthorized"}` and invokes nothing: the client never learns
    which header to send. With none, every request reaches its function, which names it."""
    assert gateway_authorizers(TEMPLATE_DOC) == []
    routed = {n for n, p in _functions().items() if _http_routes(p)}
    assert routed == keyed_functions(TEMPLATE_DOC) | KEYLESS_FUNCTIONS


def test_no_endpoint_reaches_a_function_around_the_api() -> None:
    bypass = [name for name, res in RESOURCES.items() if res["Type"].startswith(BYPASS_TYPES)]
    assert not bypass, f"resources exposing functions outside the HttpApi: {bypass}"
    for function, props in _functions().items():
        assert "FunctionUrlConfig" not in props, f"{function} has a function URL"
        for name, event in (props.get("Events") or {}).items():
            assert event["Type"] != "Api", f"{function}.{name} is a REST API route"
    api = next(iter(_of_type("AWS::Serverless::HttpApi").values()))["Properties"]
    assert not api.get("DefinitionBody") and not api.get("DefinitionUri"), "routes come from functions only"


def test_no_key_or_secret_is_passed_in_parameters_or_environment() -> None:
    """Keys live hashed in the table: none is a template parameter or a function variable."""
    names = list(TEMPLATE_DOC.get("Parameters") or {})
    scopes = [TEMPLATE_DOC.get("Globals", {}).get("Function", {}), *_functions().values()]
    for props in scopes:
        names.extend((props.get("Environment") or {}).get("Variables") or {})
    assert names, "expected the template's parameters and variables"
    assert not [n for n in names if SECRET_NAME.search(n)], names


# --- cfn-lint rules that `sam validate --lint` leaves out -------------------------------------


def _cfn_lint() -> Path:
    candidates = [Path(os.environ["SAM_CLI"]).with_name("cfn-lint")] if os.environ.get("SAM_CLI") else []
    candidates.append(ROOT / ".venv-sam" / "bin" / "cfn-lint")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail(f"cfn-lint not found (tried {', '.join(map(str, candidates))}): run `make install-sam`")


@pytest.mark.sam
def test_cfn_lint_stateful_and_arn_rules_pass() -> None:
    """I3011: the table and bucket say what happens on delete/replace; I3042: ARNs are portable."""
    result = subprocess.run(
        [
            str(_cfn_lint()),
            "--include-checks",
            "I3011",
            "I3042",
            "--format",
            "parseable",
            "--",
            str(TEMPLATE),
        ],
        cwd=ROOT,
        env={**os.environ, "AWS_DEFAULT_REGION": "us-east-1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"cfn-lint found:\n{result.stdout}\n{result.stderr}"
