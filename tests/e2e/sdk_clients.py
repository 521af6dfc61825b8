"""The real Statsig SDKs pointed at the local server, and users to evaluate (shared by the SDK tests).

Both SDKs take the console's API base; nothing they do needs Statsig's hosts. The pure SDK's own
error reporter (a class attribute, not an option) is pointed at the console's `sdk_exception`
route, as docs/sdks.md says; `guarded_network` proves no other host is asked for.
"""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import requests

AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 16_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/16.5 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (X11; Linux x86_64; rv:109.0) Gecko/20100101 Firefox/115.0",
    "Mozilla/5.0 (Linux; Android 13; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/116.0.0.0 "
    "Mobile Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 "
    "Safari/605.1.15",
]
IPS = ["8.8.8.8", "81.2.69.142", "2.16.0.1", "1.0.16.1", "5.45.192.1", "203.0.113.9"]
VERSIONS = ["1.0", "1.2.0", "1.10.1", "2.0.0", "2.1", "3.0.0-beta", "0.9.9"]


def users(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """Users in the SDKs' JSON shape; every attribute sometimes present, sometimes not."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        user: dict[str, Any] = {"userID": f"user-{i}"}
        if rng.random() < 0.8:
            user["email"] = f"{rng.choice(['ann', 'bob', 'cy', 'Bob'])}{i % 13}@" + rng.choice(
                ["corp.io", "example.com", "EXAMPLE.COM", "mail.net", "example.org"]
            )
        if rng.random() < 0.6:
            user["ip"] = rng.choice(IPS)
        if rng.random() < 0.3:
            user["country"] = rng.choice(["US", "DE", "fr"])
        if rng.random() < 0.8:
            user["userAgent"] = rng.choice(AGENTS)
        if rng.random() < 0.7:
            user["appVersion"] = rng.choice(VERSIONS)
        if rng.random() < 0.6:
            user["locale"] = rng.choice(["en_US", "fr_FR", "EN_gb"])
        custom: dict[str, Any] = {}
        if rng.random() < 0.7:
            custom["age"] = rng.choice([rng.randint(13, 70), rng.randint(13, 70) + 0.5])
        if rng.random() < 0.6:
            custom["plan"] = rng.choice(["pro", "free", "PRO"])
        if rng.random() < 0.3:
            custom["url"] = rng.choice(["https://x.io/checkout/1", "https://x.io/home"])
        if custom:
            user["custom"] = custom
        if rng.random() < 0.7:
            user["customIDs"] = {"companyID": f"c{rng.randint(0, 9)}", "stableID": f"s-{i}"}
        if rng.random() < 0.6:
            user["statsigEnvironment"] = {"tier": rng.choice(["production", "staging", "development"])}
        out.append(user)
    return out


def wait_for_document(
    url: str, key: str, names: list[str], timeout: float = 30, active: list[str] | tuple[str, ...] = ()
) -> dict[str, Any]:
    """The served document once it names every entity and shows the `active` experiments as active
    (it is built after writes, asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        r = requests.get(
            f"{url}/v1/download_config_specs/{key}.json", headers={"STATSIG-API-KEY": key}, timeout=10
        )
        if r.status_code == 200:
            doc = r.json()
            specs = {
                s["name"]: s for k in ("feature_gates", "dynamic_configs", "layer_configs") for s in doc[k]
            }
            if set(names) <= set(specs) and all(specs.get(a, {}).get("isActive") for a in active):
                return doc
        assert time.monotonic() < deadline, f"the spec document never named all of {names}"
        time.sleep(0.2)


# The SDKs' user fields by our JSON name (both SDKs name them alike but for the environment).
_USER_FIELDS = {
    "user_id": "userID",
    "email": "email",
    "ip": "ip",
    "user_agent": "userAgent",
    "country": "country",
    "locale": "locale",
    "app_version": "appVersion",
    "custom": "custom",
    "custom_ids": "customIDs",
    "private_attributes": "privateAttributes",
}


def _user_kwargs(user: dict[str, Any]) -> dict[str, Any]:
    return {arg: user.get(field) for arg, field in _USER_FIELDS.items()}


def pure_user(user: dict[str, Any]) -> Any:
    from statsig import StatsigUser

    return StatsigUser(**_user_kwargs(user), _statsig_environment=user.get("statsigEnvironment"))


def core_user(user: dict[str, Any]) -> Any:
    from statsig_python_core import StatsigUser

    return StatsigUser(**_user_kwargs(user), statsig_environment=user.get("statsigEnvironment"))


def served_id_lists(url: str, key: str) -> dict[str, set[str]]:
    """The id lists the console serves, as the SDKs read them (hashed members)."""
    headers = {"STATSIG-API-KEY": key}
    listing = requests.post(f"{url}/v1/get_id_lists", json={}, headers=headers, timeout=30).json()
    out = {}
    for name, entry in listing.items():
        text = requests.get(entry["url"], headers=headers, timeout=30).text
        out[name] = {line[1:] for line in text.splitlines() if line.startswith("+")}
    return out


@contextmanager
def pure_sdk(url: str, key: str) -> Iterator[Any]:
    """`statsig` (pure Python) against the console at `url`, its error reports sent there too."""
    from statsig import StatsigOptions, StatsigServer
    from statsig.statsig_error_boundary import _StatsigErrorBoundary

    previous = _StatsigErrorBoundary.endpoint
    _StatsigErrorBoundary.endpoint = f"{url}/v1/sdk_exception"
    sdk = StatsigServer()
    sdk.initialize(
        key, StatsigOptions(api=f"{url}/v1", disable_diagnostics=True, rulesets_sync_interval=3600)
    )
    try:
        yield sdk
    finally:
        sdk.shutdown()
        _StatsigErrorBoundary.endpoint = previous


@contextmanager
def core_sdk(url: str, key: str) -> Iterator[Any]:
    """`statsig-python-core` (the Rust core) against the console at `url`."""
    from statsig_python_core import Statsig, StatsigOptions

    options = StatsigOptions()
    options.specs_url = f"{url}/v2/download_config_specs"
    options.id_lists_url = f"{url}/v1/get_id_lists"
    options.log_event_url = f"{url}/v1/log_event"
    options.enable_id_lists = True
    options.specs_sync_interval_ms = 3_600_000
    options.fallback_to_statsig_api = False
    sdk = Statsig(key, options)
    sdk.initialize().wait()
    try:
        yield sdk
    finally:
        sdk.shutdown().wait()


@contextmanager
def guarded_network() -> Iterator[list[str]]:
    """Every host but loopback unreachable for Python's sockets; yields the hosts asked for."""
    asked: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in ("127.0.0.1", "localhost", "::1"):
            asked.append(name)
            raise socket.gaierror(socket.EAI_NONAME, f"{name} is unreachable in this test")
        return real(host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
    try:
        yield asked
    finally:
        socket.getaddrinfo = real  # type: ignore[assignment]
