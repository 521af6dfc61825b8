"""User-agent parsing and IP-to-country lookup, with the libraries the `statsig` SDK uses.

`ua_based` and `ip_based` conditions only answer like the SDK if the same tables decide, so
these wrap `ua_parser` (uap-core regexes) and `ip3country`, loaded on first use: the
parser compiles about a thousand regexes (~0.3 s), which a cold start should not pay for
specs that never target a browser or a country.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

# uap-core has no iPadOS pattern: the SDK reads "iPadOS 26.5" itself when the OS has no version.
_IPADOS_VERSION = re.compile(r"\biPadOS (\d+)(?:\.(\d+))?(?:\.(\d+))?")


@cache
def _parser() -> Any:
    from ua_parser import user_agent_parser  # deferred: compiling the regexes is slow

    return user_agent_parser


@cache
def _countries() -> Any:
    from ip3country import CountryLookup  # deferred: builds its table on load

    return CountryLookup()


def country_of_ip(ip: Any) -> str | None:
    """ISO country code of an IPv4 address, as the SDK's ip3country lookup gives it."""
    country: str | None = _countries().lookupStr(ip)
    return country


def _numeric(part: Any) -> int | None:
    if part is None:
        return 0
    try:
        return int(part)
    except ValueError:
        return None


def _version(version: dict[str, Any] | None) -> str | None:
    """`major.minor.patch` with missing parts as 0; None when a part is not a number (as the SDK)."""
    if version is None:
        return None
    parts = []
    for key in ("major", "minor", "patch"):
        number = _numeric(version.get(key, "0"))
        if number is None:
            return None
        parts.append(number)
    return "{}.{}.{}".format(*parts)


def _os(ua: str, parsed: dict[str, Any]) -> dict[str, Any] | None:
    os_info: dict[str, Any] | None = parsed.get("os")
    if os_info is None or os_info.get("major") is not None:
        return os_info
    match = _IPADOS_VERSION.search(ua)
    if match is None:
        return os_info
    major, minor, patch = match.groups()
    return {**os_info, "major": major, "minor": minor, "patch": patch}


def user_agent_field(ua: Any, field: str) -> Any:
    """The browser/OS field of a user agent, or None when unknown or unparsable.

    `ua_parser.user_agent_parser.Parse` caches its answers per string, so repeated agents cost
    a dictionary lookup.
    """
    try:
        parsed = _parser().Parse(ua)
    except Exception:  # the SDK treats any parser failure as "no value"
        return None
    field = field.lower()
    if field in ("osname", "os_name"):
        return parsed.get("os", {"family": None}).get("family")
    if field in ("os_version", "osversion"):
        return _version(_os(ua, parsed))
    if field in ("browser_name", "browsername"):
        return parsed.get("user_agent", {"family": None}).get("family")
    if field in ("browser_version", "browserversion"):
        return _version(parsed.get("user_agent"))
    return None
