"""Evaluate a Statsig v1 `download_config_specs` document exactly as the `statsig` server SDK does.

Callers without an SDK (POST /v1/check_gate and friends) must get the answer an SDK would give
for the same user from the same document, so this is a faithful port of the pure-Python SDK's
`statsig/evaluator.py` (0.72.1), quirks included: every condition of a rule is evaluated (a gate
condition records its exposure even after an earlier condition failed), a nested gate writes
into its parent's result, an exception while evaluating (`gt` on a non-number, a bad regex)
turns the answer into rule id `"error"`, and a spec with an unknown condition type or operator
is dropped whole. What differs is speed: targets, regexes, dates and number parses are
compiled once per document instead of on every check.

The SDK's local overrides and the `overrides`/`override_rules` document sections are not
implemented: the console never serves them.
"""

from __future__ import annotations

import operator
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from expconsole.services.sdk import ua
from expconsole.services.sdk.hashing import id_list_hash, unit_hash

SUPPORTED_CONDITION_TYPES = frozenset(
    {
        "public",
        "fail_gate",
        "pass_gate",
        "ip_based",
        "ua_based",
        "user_field",
        "environment_field",
        "current_time",
        "user_bucket",
        "unit_id",
        "multi_pass_gate",
        "multi_fail_gate",
        "target_app",
    }
)
SUPPORTED_OPERATORS = frozenset(
    {
        "gt",
        "gte",
        "lt",
        "lte",
        "version_gt",
        "version_gte",
        "version_lt",
        "version_lte",
        "version_eq",
        "version_neq",
        "any",
        "none",
        "any_case_sensitive",
        "none_case_sensitive",
        "str_starts_with_any",
        "str_ends_with_any",
        "str_contains_any",
        "str_contains_none",
        "str_matches",
        "eq",
        "neq",
        "before",
        "after",
        "on",
        "in_segment_list",
        "not_in_segment_list",
        "array_contains_any",
        "array_contains_none",
        "array_contains_all",
        "not_array_contains_all",
    }
)

GATE_EXPOSURE = "statsig::gate_exposure"
CONFIG_EXPOSURE = "statsig::config_exposure"
LAYER_EXPOSURE = "statsig::layer_exposure"

# The data source the SDK names in an exposure's `reason`: ours is a document fetched over HTTP.
_SOURCE = "Network"


# ---------------------------------------------------------------------------------------- users


class User:
    """A user in the SDK's JSON shape (`userID`, `customIDs`, `custom`, ...), normalised once.

    Like `StatsigUser`, `userID` and custom ids are strings and one of them is required.
    `environment` is the `statsigEnvironment` the evaluation sees: the user's own, else the
    document's `default_environment` (filled in by `Evaluator.user`).
    """

    __slots__ = (
        "app_version",
        "country",
        "custom",
        "custom_ids",
        "email",
        "environment",
        "ip",
        "locale",
        "private_attributes",
        "user_agent",
        "user_id",
    )

    def __init__(self, data: Mapping[str, Any], default_environment: str | None = None) -> None:
        if not isinstance(data, Mapping):
            raise ValueError("user: must be an object")
        for key in ("custom", "privateAttributes", "customIDs", "statsigEnvironment"):
            value = data.get(key)
            if value is not None and not isinstance(value, Mapping):
                raise ValueError(f"user.{key}: must be an object")
        user_id = data.get("userID")
        self.user_id = None if user_id is None else str(user_id)
        custom_ids = data.get("customIDs")
        self.custom_ids = (
            None if custom_ids is None else {str(key): str(value) for key, value in custom_ids.items()}
        )
        if not self.user_id and not self.custom_ids:
            raise ValueError("user: userID or at least one of customIDs is required")
        self.email = data.get("email")
        self.ip = data.get("ip")
        self.user_agent = data.get("userAgent")
        self.country = data.get("country")
        self.locale = data.get("locale")
        self.app_version = data.get("appVersion")
        self.custom = data.get("custom")
        self.private_attributes = data.get("privateAttributes")
        environment = data.get("statsigEnvironment")
        if environment is None and default_environment is not None:
            environment = {"tier": default_environment}
        self.environment = environment

    def to_dict(self) -> dict[str, Any]:
        """The user as the SDK writes it into a logged event (private attributes left out)."""
        environment = None
        if isinstance(self.environment, dict) and isinstance(self.environment.get("tier"), str):
            environment = {"tier": self.environment["tier"]}
        fields = {
            "userID": self.user_id,
            "email": _str_or_none(self.email),
            "ip": _str_or_none(self.ip),
            "userAgent": _str_or_none(self.user_agent),
            "country": _str_or_none(self.country),
            "locale": _str_or_none(self.locale),
            "appVersion": _str_or_none(self.app_version),
            "custom": None if self.custom is None else dict(self.custom),
            "statsigEnvironment": environment,
            "customIDs": None if self.custom_ids is None else dict(self.custom_ids),
        }
        return {key: value for key, value in fields.items() if value is not None}


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _from_user(user: User, field: str) -> Any:
    """A user field by condition `field` name, then `custom`, then `privateAttributes`."""
    value = None
    lower = field.lower()
    if lower in ("userid", "user_id"):
        value = user.user_id
    elif lower == "email":
        value = user.email
    elif lower in ("ip", "ipaddress", "ip_address"):
        value = user.ip
    elif lower in ("useragent", "user_agent"):
        value = user.user_agent
    elif lower == "country":
        value = user.country
    elif lower == "locale":
        value = user.locale
    elif lower in ("appversion", "app_version"):
        value = user.app_version
    if (value is None or value == "") and user.custom is not None:
        if field in user.custom:
            value = user.custom[field]
        elif field.casefold() in user.custom:
            value = user.custom[field.casefold()]
    if (value is None or value == "") and user.private_attributes is not None:
        if field in user.private_attributes:
            value = user.private_attributes[field]
        elif field.lower() in user.private_attributes:
            value = user.private_attributes[field.lower()]
    return value


def _unit_id(user: User, id_type: Any) -> str | None:
    if id_type is not None and id_type.lower() != "userid":
        if user.custom_ids is None:
            return None
        custom_id = user.custom_ids.get(id_type)
        if custom_id is not None:
            return custom_id
        return user.custom_ids.get(id_type.lower())
    return user.user_id


def _from_environment(user: User, field: str) -> Any:
    environment = user.environment
    if environment is None:
        return None
    if field in environment:
        return environment[field]
    if field.lower() in environment:
        return environment[field]  # the SDK's own lookup (KeyError -> "error" when cases differ)
    return None


# ------------------------------------------------------------------------------ compiled spec

_Test = Callable[[Any], bool]


def _never(_value: Any) -> bool:
    return False


def _numeric_test(target: Any, compare: Callable[[float, float], bool]) -> _Test:
    error: Exception | None = None
    number: float | None = None
    try:
        number = None if target is None else float(target)
    except (TypeError, ValueError) as exc:
        error = exc

    def test(value: Any) -> bool:
        given = None if value is None else float(value)
        if error is not None:
            raise error
        if given is None or number is None:
            return False
        return compare(given, number)

    return test


def _version_compare(left: str, right: str, compare: Callable[[int], bool]) -> bool:
    p1 = left.split(".")
    p2 = right.split(".")
    try:
        for i in range(max(len(p1), len(p2))):
            c1 = int(float(p1[i])) if i < len(p1) else 0
            c2 = int(float(p2[i])) if i < len(p2) else 0
            if c1 < c2:
                return compare(-1)
            if c1 > c2:
                return compare(1)
    except ValueError:
        return False
    return compare(0)


def _strip_prerelease(version: str) -> str:
    dash = version.find("-")
    return version[:dash] if dash > 0 else version


def _version_test(target: Any, compare: Callable[[int], bool]) -> _Test:
    right = None if target is None else _strip_prerelease(str(target))

    def test(value: Any) -> bool:
        if value is None or right is None:
            return False
        return _version_compare(_strip_prerelease(str(value)), right, compare)

    return test


def _match_test(target: Any, compare: Callable[[str, str], bool], negate: bool) -> _Test:
    """`str_*_any`: case-insensitive match of the value against any target string."""
    error: Exception | None = None
    needles: list[str] = []
    if target is not None:
        try:
            needles = [str(item).casefold() for item in target if item is not None]
        except TypeError as exc:
            error = exc

    def test(value: Any) -> bool:
        found = False
        if value is not None and target is not None:
            if error is not None:
                raise error
            haystack = str(value).casefold()
            found = any(compare(haystack, needle) for needle in needles)
        return not found if negate else found

    return test


def _regex_test(target: Any) -> _Test:
    error: Exception | None = None
    pattern: re.Pattern[str] | None = None
    if target is not None:
        try:
            pattern = re.compile(str(target))
        except re.error as exc:
            error = exc

    def test(value: Any) -> bool:
        if value is None or target is None:
            return False
        if error is not None:
            raise error
        assert pattern is not None
        return pattern.search(str(value)) is not None

    return test


def _to_date(value: Any) -> datetime | None:
    if value is None:
        return None
    epoch = int(value)
    if len(str(value)) >= 11:
        epoch //= 1000
    return datetime.fromtimestamp(epoch)  # local time, as the SDK (its `on` compares local dates)


def _date_test(target: Any, compare: Callable[[datetime, datetime], bool]) -> _Test:
    error: Exception | None = None
    target_date: datetime | None = None
    try:
        target_date = _to_date(target)
    except (TypeError, ValueError, OverflowError, OSError) as exc:
        error = exc

    def test(value: Any) -> bool:
        if value is None and target is None:
            return False
        value_date = _to_date(value)
        if error is not None:
            raise error
        if value_date is None or target_date is None:
            return False
        return compare(value_date, target_date)

    return test


def _safe_int(value: Any) -> int | None:
    try:
        return int(value)
    except (ValueError, TypeError):
        return None


class _Condition:
    """One condition with its target parsed the way the SDK's spec store parses it."""

    __slots__ = ("additional_values", "field", "id_type", "kind", "segment", "target", "test")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        kind = raw.get("type", "")
        # A type that is not a string fails at evaluation in the SDK (rule id "error").
        self.kind: str | None = kind.upper() if isinstance(kind, str) else None
        # The spec's JSON as it is: a target or an operator of any type answers as the SDK's would.
        self.target: Any = raw.get("targetValue")
        self.field = raw.get("field", "")
        self.id_type = raw.get("idType", "userID")
        self.additional_values = raw.get("additionalValues", {"salt": None})
        op: Any = raw.get("operator")
        # in_segment_list (True) / not_in_segment_list (False) need the evaluator's id lists.
        self.segment: bool | None = {"in_segment_list": True, "not_in_segment_list": False}.get(op)
        self.test: _Test = self._compile(op, kind, raw.get("targetValue", []))

    def _compile(self, op: Any, raw_type: Any, target_value: Any) -> _Test:
        target = self.target
        lower_op = op.lower() if isinstance(op, str) else op
        lower_type = raw_type.lower() if isinstance(raw_type, str) else raw_type
        # The SDK's spec store builds its lookup tables from the lower-cased operator ...
        buckets: dict[int, bool] | None = None
        fast: dict[str, bool] | None = None
        if lower_op in ("any", "none") and lower_type == "user_bucket":
            buckets = {int(value): True for value in target_value}
        elif lower_op in ("any", "none") and isinstance(target_value, list):
            fast = {str(value).casefold(): True for value in target_value}
        elif lower_op in ("any_case_sensitive", "none_case_sensitive") and isinstance(target_value, list):
            fast = {str(value): True for value in target_value}
        if lower_op in _ARRAY_OPERATORS and isinstance(target_value, list):
            fast = {str(value): True for value in target_value}
        # ... but evaluates the operator as written: anything else answers False.
        if op in _NUMERIC_COMPARISONS:
            return _numeric_test(target, _NUMERIC_COMPARISONS[op])
        if op in _VERSION_COMPARISONS:
            return _version_test(target, _VERSION_COMPARISONS[op])
        if op in ("any", "none", "any_case_sensitive", "none_case_sensitive"):
            return self._membership_test(op, buckets, fast)
        if op in _STRING_MATCHES:
            compare, negate = _STRING_MATCHES[op]
            return _match_test(target, compare, negate)
        if op == "str_matches":
            return _regex_test(target)
        if op == "eq":
            return lambda value: value == target
        if op == "neq":
            return lambda value: value != target
        if op == "before":
            return _date_test(target, operator.lt)
        if op == "after":
            return _date_test(target, operator.gt)
        if op == "on":
            return _date_test(target, lambda a, b: a.date() == b.date())
        if op in _ARRAY_OPERATORS:
            return self._array_test(op, fast)
        return _never

    @staticmethod
    def _membership_test(op: str, buckets: dict[int, bool] | None, fast: dict[str, bool] | None) -> _Test:
        negate = op in ("none", "none_case_sensitive")
        if buckets is not None and op in ("any", "none"):

            def bucket_test(value: Any) -> bool:
                found = isinstance(value, int) and value in buckets
                return not found if negate else found

            return bucket_test
        fold = op in ("any", "none")

        def test(value: Any) -> bool:
            found = False
            if value is not None and fast is not None:
                text = str(value)
                found = (text.casefold() if fold else text) in fast
            return not found if negate else found

        return test

    @staticmethod
    def _array_test(op: str, fast: dict[str, bool] | None) -> _Test:
        targets = None if fast is None else [(key, _safe_int(key)) for key in fast]
        want_all = op in ("array_contains_all", "not_array_contains_all")
        negate = op in ("array_contains_none", "not_array_contains_all")

        def test(value: Any) -> bool:
            if not isinstance(value, list):
                return False
            if targets is None:
                raise TypeError(f"{op}: targetValue is not a list")
            if want_all:
                result = all(not (number not in value and text not in value) for text, number in targets)
            else:
                result = any((number and number in value) or text in value for text, number in targets)
            return not result if negate else result

        return test


_NUMERIC_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "gt": operator.gt,
    "gte": operator.ge,
    "lt": operator.lt,
    "lte": operator.le,
}
_VERSION_COMPARISONS: dict[str, Callable[[int], bool]] = {
    "version_gt": lambda r: r > 0,
    "version_gte": lambda r: r >= 0,
    "version_lt": lambda r: r < 0,
    "version_lte": lambda r: r <= 0,
    "version_eq": lambda r: r == 0,
    "version_neq": lambda r: r != 0,
}
_STRING_MATCHES: dict[str, tuple[Callable[[str, str], bool], bool]] = {
    "str_starts_with_any": (str.startswith, False),
    "str_ends_with_any": (str.endswith, False),
    "str_contains_any": (lambda a, b: b in a, False),
    "str_contains_none": (lambda a, b: b in a, True),
}
_ARRAY_OPERATORS = frozenset(
    {"array_contains_any", "array_contains_none", "array_contains_all", "not_array_contains_all"}
)
_GATE_KINDS = frozenset({"PASS_GATE", "FAIL_GATE", "MULTI_PASS_GATE", "MULTI_FAIL_GATE"})


class _Rule:
    """A rule with the fields the SDK reads on every check looked up once."""

    __slots__ = (
        "any_side_effects",
        "conditions",
        "delegate",
        "group_name",
        "hash_prefix",
        "id",
        "id_type",
        "is_experiment_group",
        "pass_percentage",
        "raw",
        "return_value",
        "side_effects",
    )

    def __init__(self, raw: Mapping[str, Any], spec: Mapping[str, Any]) -> None:
        self.raw = raw
        self.conditions = [_Condition(condition) for condition in raw.get("conditions", [])]
        # Gate conditions record exposures, so they run even after the rule already failed.
        self.side_effects = [condition.kind in _GATE_KINDS for condition in self.conditions]
        self.any_side_effects = any(self.side_effects)
        self.id = raw.get("id", "")
        self.return_value = raw.get("returnValue")
        self.group_name = raw.get("groupName", None)
        self.is_experiment_group = raw.get("isExperimentGroup", False)
        self.delegate = raw.get("configDelegate", None)
        self.pass_percentage = raw.get("passPercentage", 0)
        self.id_type = raw.get("idType", "userID")
        spec_salt, rule_salt = spec.get("salt", ""), raw.get("salt", raw.get("id", ""))
        # Unusual salts take the SDK's own path at check time (and fail there as it does).
        self.hash_prefix = (
            f"{spec_salt}.{rule_salt}." if isinstance(spec_salt, str) and isinstance(rule_salt, str) else None
        )


class _Spec:
    __slots__ = ("default_value", "enabled", "explicit_parameters", "id_type", "raw", "rules")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        self.rules = [_Rule(rule, raw) for rule in raw.get("rules", [])]
        self.enabled = bool(raw.get("enabled", False))
        self.id_type = raw.get("idType", "")
        self.default_value = raw.get("defaultValue", {})
        self.explicit_parameters = raw.get("explicitParameters", [])


def _is_supported(spec: Mapping[str, Any]) -> bool:
    for rule in spec.get("rules", []):
        for condition in rule.get("conditions", []):
            op = condition.get("operator")
            if op is not None and op.lower() not in SUPPORTED_OPERATORS:
                return False
            kind = condition.get("type")
            if kind is not None and kind.lower() not in SUPPORTED_CONDITION_TYPES:
                return False
    return True


# ----------------------------------------------------------------------------------- results


@dataclass(slots=True)
class GateEvaluation:
    """A gate's answer; `reason` is the SDK's detailed reason (`Network`, `Network:Unrecognized`)."""

    name: str
    value: bool
    rule_id: str
    group_name: str | None
    id_type: str
    secondary_exposures: list[dict[str, str]]
    is_experiment_group: bool
    reason: str


@dataclass(slots=True)
class ConfigEvaluation:
    """A dynamic config's or experiment's answer; `rule_passed` is the exposure's `rulePassed`."""

    name: str
    value: dict[str, Any]
    rule_id: str
    group_name: str | None
    id_type: str
    secondary_exposures: list[dict[str, str]]
    is_experiment_group: bool
    rule_passed: bool
    reason: str


@dataclass(slots=True)
class LayerEvaluation:
    """A layer's answer: its values come from the allocated experiment when a rule delegated."""

    name: str
    value: dict[str, Any]
    rule_id: str
    group_name: str | None
    id_type: str
    secondary_exposures: list[dict[str, str]]
    undelegated_secondary_exposures: list[dict[str, str]]
    is_experiment_group: bool
    allocated_experiment: str | None
    explicit_parameters: list[str]
    reason: str


Evaluation = GateEvaluation | ConfigEvaluation | LayerEvaluation


class _Result:
    """The SDK's mutable `_ConfigEvaluation`: nested gates and delegates write into it."""

    __slots__ = (
        "allocated_experiment",
        "explicit_parameters",
        "group_name",
        "id_type",
        "is_experiment_group",
        "json_value",
        "passed",
        "reason",
        "rule_id",
        "secondary",
        "undelegated",
    )

    def __init__(self) -> None:
        self.passed: Any = False
        self.json_value: Any = {}
        self.rule_id: Any = ""
        self.id_type: Any = ""
        self.secondary: list[dict[str, Any]] = []
        self.undelegated = self.secondary  # the same list until a delegate or a reset splits them
        self.allocated_experiment: str | None = None
        self.explicit_parameters: Any = []
        self.is_experiment_group: Any = False
        self.group_name: Any = None
        self.reason: str | None = None

    def reset(self) -> None:
        self.passed = False
        self.json_value = {}
        self.rule_id = ""
        self.id_type = ""
        self.secondary = []
        self.undelegated = []
        self.allocated_experiment = None
        self.explicit_parameters = []
        self.is_experiment_group = False
        self.group_name = None
        self.reason = None

    def detailed_reason(self) -> str:
        return _SOURCE if self.reason is None else f"{_SOURCE}:{self.reason}"


def _clean_exposures(exposures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop segment pseudo-gates and repeats, as the SDK does before logging."""
    if not exposures:
        return []
    seen: set[str] = set()
    result = []
    for exposure in exposures:
        if exposure["gate"].startswith("segment:"):
            continue
        key = f"{exposure['gate']}|{exposure['gateValue']}|{exposure['ruleID']}"
        if key not in seen:
            seen.add(key)
            result.append(exposure)
    return result


# --------------------------------------------------------------------------------- evaluator


class Evaluator:
    """Answers gates, configs, experiments and layers from one v1 spec document.

    `id_lists` maps an id list's name to its members in stored form (`id_list_hash(id)`, the
    8-character strings of the id-list files); a list that is absent matches nobody, as in the
    SDK before the list is downloaded. Build one per document; checks never modify it, and the
    values they return are the document's own objects (read them, do not mutate them).
    """

    def __init__(self, spec: Mapping[str, Any], id_lists: Mapping[str, set[str]] | None = None) -> None:
        self.time = spec.get("time", 0)
        self.default_environment: str | None = spec.get("default_environment")
        self._app_id = spec.get("app_id")
        self._id_lists = dict(id_lists or {})
        self._gates = self._parse(spec.get("feature_gates", []))
        self._configs = self._parse(spec.get("dynamic_configs", []))
        self._layers = self._parse(spec.get("layer_configs", []))
        self.unsupported: set[str] = set()
        for key in ("feature_gates", "dynamic_configs", "layer_configs"):
            self.unsupported.update(item.get("name") for item in spec.get(key, []) if not _is_supported(item))
        self.experiment_to_layer = {
            experiment: layer
            for layer, experiments in spec.get("layers", {}).items()
            for experiment in experiments
        }

    @staticmethod
    def _parse(items: Iterable[Mapping[str, Any]]) -> dict[str, _Spec]:
        parsed: dict[str, _Spec] = {}
        dropped: set[str] = set()
        for item in items:
            name = item.get("name")
            compiled = _Spec(item)  # raises like the SDK's parser on an unparsable user_bucket target
            if name is not None:
                parsed[name] = compiled
            if not _is_supported(item) and name is not None:
                dropped.add(name)
        for name in dropped:
            parsed.pop(name, None)
        return parsed

    # ------------------------------------------------------------------------------ public

    def user(self, data: Mapping[str, Any] | User) -> User:
        """Normalise a user dict once (reuse it across checks); raises ValueError naming the field."""
        if isinstance(data, User):
            return data
        return User(data, self.default_environment)

    def check_gate(self, user: Mapping[str, Any] | User, name: str) -> GateEvaluation:
        result = self._top(self.user(user), name, self._gates)
        return GateEvaluation(
            name=name,
            value=bool(result.passed),
            rule_id=result.rule_id,
            group_name=result.group_name,
            id_type=result.id_type,
            secondary_exposures=result.secondary,
            is_experiment_group=bool(result.is_experiment_group),
            reason=result.detailed_reason(),
        )

    def get_config(self, user: Mapping[str, Any] | User, name: str) -> ConfigEvaluation:
        result = self._top(self.user(user), name, self._configs)
        return ConfigEvaluation(
            name=name,
            value={} if result.json_value is None else result.json_value,
            rule_id=result.rule_id,
            group_name=result.group_name,
            id_type=result.id_type,
            secondary_exposures=result.secondary,
            is_experiment_group=bool(result.is_experiment_group),
            rule_passed=bool(result.passed),
            reason=result.detailed_reason(),
        )

    def get_experiment(self, user: Mapping[str, Any] | User, name: str) -> ConfigEvaluation:
        """Experiments are dynamic configs in the document; the SDK evaluates them alike."""
        return self.get_config(user, name)

    def get_layer(self, user: Mapping[str, Any] | User, name: str) -> LayerEvaluation:
        result = self._top(self.user(user), name, self._layers)
        return LayerEvaluation(
            name=name,
            value={} if result.json_value is None else result.json_value,
            rule_id=result.rule_id,
            group_name=result.group_name,
            id_type=result.id_type,
            secondary_exposures=result.secondary,
            undelegated_secondary_exposures=result.undelegated,
            is_experiment_group=bool(result.is_experiment_group),
            allocated_experiment=result.allocated_experiment,
            explicit_parameters=list(result.explicit_parameters or []),
            reason=result.detailed_reason(),
        )

    def exposure_events(
        self,
        user: Mapping[str, Any] | User,
        result: Evaluation,
        parameter_names: Iterable[str] | None = None,
        *,
        time_ms: int | None = None,
    ) -> list[dict[str, Any]]:
        """The `statsig::*_exposure` events an SDK logs for this answer, in its event shape.

        A gate or config gives one event. A layer gives one per parameter read, as the SDK logs
        on `layer.get(name)`: `parameter_names`, or every parameter with a value when omitted.
        The SDK de-duplicates repeats for 60 s; that is the caller's business here.
        """
        normal = self.user(user)
        user_dict = normal.to_dict()
        now = round(time.time() * 1000) if time_ms is None else time_ms
        evaluation_metadata = {
            "reason": result.reason,
            "configSyncTime": self.time,
            "initTime": self.time,
            "serverTime": now,
        }

        def event(name: str, metadata: dict[str, Any], exposures: list[dict[str, Any]]) -> dict[str, Any]:
            return {
                "user": user_dict,
                "eventName": name,
                "metadata": {**metadata, **evaluation_metadata},
                "secondaryExposures": exposures,
                "time": now,
                "statsigMetadata": {"samplingMode": None},
            }

        if isinstance(result, GateEvaluation):
            metadata = {"gate": result.name, "gateValue": "true" if result.value else "false"}
            metadata["ruleID"] = result.rule_id
            return [event(GATE_EXPOSURE, metadata, result.secondary_exposures)]
        if isinstance(result, ConfigEvaluation):
            metadata = {
                "config": result.name,
                "ruleID": result.rule_id,
                "rulePassed": "true" if result.rule_passed else "false",
            }
            return [event(CONFIG_EXPOSURE, metadata, result.secondary_exposures)]
        names = (
            [key for key, value in result.value.items() if value is not None]
            if parameter_names is None
            else list(parameter_names)
        )
        events = []
        for parameter in names:
            explicit = parameter in result.explicit_parameters
            metadata = {
                "config": result.name,
                "ruleID": result.rule_id,
                "allocatedExperiment": (result.allocated_experiment or "") if explicit else "",
                "parameterName": parameter,
                "isExplicitParameter": "true" if explicit else "false",
            }
            exposures = result.secondary_exposures if explicit else result.undelegated_secondary_exposures
            events.append(event(LAYER_EXPOSURE, metadata, exposures))
        return events

    # ---------------------------------------------------------------------------- internals

    def _top(self, user: User, name: str, specs: dict[str, _Spec]) -> _Result:
        result = _Result()
        try:
            self._guarded(user, name, specs, result, nested=False)
        except RecursionError:
            # A cycle of gates: the SDK's error boundary answers the empty default.
            result = _Result()
        return result

    def _guarded(self, user: User, name: str, specs: dict[str, _Spec], result: _Result, nested: bool) -> None:
        """The SDK's `__eval_config`: any failure inside becomes rule id "error"."""
        try:
            self._evaluate(user, name, specs, result, nested)
        except RecursionError:
            raise
        except Exception:
            result.reason = "error"
            result.rule_id = "error"

    def _evaluate(
        self, user: User, name: str, specs: dict[str, _Spec], result: _Result, nested: bool
    ) -> None:
        spec = specs.get(name)
        if spec is None:
            result.reset()
            result.reason = "Unsupported" if name in self.unsupported else "Unrecognized"
            return
        if not spec.enabled:
            self._finalize(spec, result, False, None, nested)
            return
        for rule in spec.rules:
            self._evaluate_rule(user, rule, result)
            if result.passed:
                if rule.delegate is not None and self._delegate(user, rule.delegate, result):
                    result.secondary = _clean_exposures(result.secondary)
                    result.undelegated = _clean_exposures(result.undelegated)
                    return
                passes = self._pass_percentage(user, rule, spec)
                self._finalize(spec, result, passes, rule, nested)
                return
        self._finalize(spec, result, False, None, nested)

    @staticmethod
    def _finalize(spec: _Spec, result: _Result, passed: bool, rule: _Rule | None, nested: bool) -> None:
        result.passed = passed
        result.id_type = spec.id_type
        result.reason = None
        if rule is None:
            result.json_value = spec.default_value
            result.group_name = None
            result.is_experiment_group = False
            result.rule_id = "default" if spec.enabled else "disabled"
        else:
            result.json_value = rule.return_value if passed else spec.default_value
            result.group_name = rule.group_name
            result.is_experiment_group = rule.is_experiment_group
            result.rule_id = rule.id
        if not nested:
            result.secondary = _clean_exposures(result.secondary)
            result.undelegated = _clean_exposures(result.undelegated)

    def _evaluate_rule(self, user: User, rule: _Rule, result: _Result) -> None:
        passed = True
        if not rule.any_side_effects:
            for condition in rule.conditions:
                if not self._condition(user, condition, result):
                    passed = False
                    break
        else:
            for condition, side_effects in zip(rule.conditions, rule.side_effects, strict=True):
                if (passed or side_effects) and not self._condition(user, condition, result):
                    passed = False
        result.passed = passed

    def _delegate(self, user: User, delegate: Any, result: _Result) -> bool:
        config = self._configs.get(delegate)
        if config is None:
            return False
        result.undelegated = result.secondary[:]
        self._evaluate(user, delegate, self._configs, result, nested=True)
        result.explicit_parameters = config.explicit_parameters
        result.allocated_experiment = delegate
        return True

    @staticmethod
    def _pass_percentage(user: User, rule: _Rule, spec: _Spec) -> bool:
        percentage = rule.pass_percentage
        if percentage == 100.0:
            return True
        if percentage == 0.0:
            return False
        unit = _unit_id(user, rule.id_type) or ""
        prefix = rule.hash_prefix
        if prefix is None:  # the SDK's expression, raising where it raises
            rule_salt = rule.raw.get("salt", rule.raw.get("id", ""))
            prefix = spec.raw.get("salt", "") + "." + rule_salt + "."
        passed: bool = (unit_hash(prefix + str(unit)) % 10000) < percentage * 100
        return passed

    def _gate_exposure(
        self, user: User, gate: Any, result: _Result, nested: bool
    ) -> tuple[bool, dict[str, Any]]:
        """Evaluate a referenced gate: nested writes into the parent's result (SDK semantics)."""
        inner = result if nested else _Result()
        self._guarded(user, gate, self._gates, inner, nested)
        value = bool(inner.passed)
        exposure = {"gate": gate, "gateValue": "true" if value else "false", "ruleID": inner.rule_id}
        return value, exposure

    def _condition(self, user: User, condition: _Condition, result: _Result) -> bool:
        kind = condition.kind
        value: Any = None
        if kind == "PUBLIC":
            return True
        if kind in ("FAIL_GATE", "PASS_GATE"):
            passed, exposure = self._gate_exposure(user, condition.target, result, nested=True)
            result.secondary.append(exposure)
            return passed if kind == "PASS_GATE" else not passed
        if kind in ("MULTI_PASS_GATE", "MULTI_FAIL_GATE"):
            target = condition.target
            if target is None or len(target) == 0:
                return False
            passed = False
            for gate in target:
                other, exposure = self._gate_exposure(user, gate, result, nested=False)
                result.secondary.append(exposure)
                passed = passed or other if kind == "MULTI_PASS_GATE" else passed or not other
                if passed:
                    break
            return passed
        if kind == "USER_FIELD":
            value = _from_user(user, condition.field)
        elif kind == "UNIT_ID":
            value = _unit_id(user, condition.id_type)
        elif kind == "USER_BUCKET":
            salt = condition.additional_values.get("salt")
            salt_text = ("" if salt is None else str(salt)) or ""
            unit = _unit_id(user, condition.id_type) or ""
            value = unit_hash(salt_text + "." + unit) % 1000
        elif kind == "ENVIRONMENT_FIELD":
            value = _from_environment(user, condition.field)
        elif kind == "IP_BASED":
            value = _from_user(user, condition.field)
            if value is None:
                ip = _from_user(user, "ip")
                if ip is not None and condition.field == "country":
                    value = ua.country_of_ip(ip)
            if value is None:
                return False
        elif kind == "UA_BASED":
            value = _from_user(user, condition.field)
            if value is None:
                agent = _from_user(user, "userAgent")
                value = None if agent is None else ua.user_agent_field(agent, condition.field)
        elif kind == "CURRENT_TIME":
            value = round(time.time() * 1000)
        elif kind == "TARGET_APP":
            value = self._app_id
        elif kind is None:
            raise TypeError("condition type is not a string")
        if condition.segment is not None:
            members = self._id_lists.get(condition.target)
            found = members is not None and id_list_hash(value) in members
            return found if condition.segment else not found
        return condition.test(value)
