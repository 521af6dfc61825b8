"""A newcomer's first start: from a fresh clone to the printed URL, and the web console's first page.

Each run clones the repository (a commit, default HEAD) into a new temporary folder and runs
`make serve PORT=<free>` there with empty package caches (pip's and uv's pointed at a new
folder), as someone who has just cloned the project does. It times the printed `Web console:`
line from the start of `make`, and splits it at the moment make starts `expconsole serve` (the
install before it, the server's own start after it). Then, at once, the console's first page as
a browser loads it: `GET /`, the styles and scripts index.html names, and the ES modules they
import, level by level, up to six requests at a time (a browser's connections per host). The
page shows the sign-in form without calling the API; what the user waits for next, once a key is
pasted, is timed too: the key check (`GET /console/v1/experiments?limit=1`) and the two calls the
experiments list makes at once. Both are loaded a second time (warm sandboxes) for comparison.
`--browser` loads the same in Debian's chromium through Playwright instead (a dev dependency).

Timings depend on the machine and the network, so every figure is printed beside a baseline
measured in the same run: `python -m venv` plus `pip install boto3 pydantic aws-lambda-powertools`
into an empty venv with an empty cache (for the time to the URL), and a fresh interpreter's
`import boto3, pydantic, aws_lambda_powertools` from that venv (the floor of one Lambda cold
start, for the page). The exit status is 0 whatever the figures; 1 if a start fails.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin

ROOT = Path(__file__).resolve().parents[1]
BASELINE_PACKAGES = ("boto3", "pydantic", "aws-lambda-powertools")
BASELINE_IMPORT = "import boto3, pydantic, aws_lambda_powertools"
BROWSER_CONNECTIONS = 6  # Chromium's and Firefox's connections per host over HTTP/1.1
CHROMIUM = "/usr/bin/chromium"
SERVE_COMMAND = re.compile(r"\bexpconsole serve\b")
# What index.html and the modules load: stylesheets, classic and module scripts, static imports.
PAGE_ASSETS = re.compile(r"""<(?:link[^>]*\brel="stylesheet"[^>]*\bhref|script[^>]*\bsrc)="([^"]+)\"""")
MODULE_IMPORTS = re.compile(r"""^\s*import\s[^"']*["']([^"']+)["']""", re.MULTILINE)


@dataclass
class Start:
    """One fresh clone's `make serve`: when it printed what, and what its first page took."""

    url_s: float = 0.0
    install_s: float = 0.0
    server_s: float = 0.0
    page_s: float = 0.0
    signin_s: float = 0.0
    warm_page_s: float = 0.0
    warm_signin_s: float = 0.0
    error: str = ""
    requests: list[tuple[str, float]] = field(default_factory=list)
    base_install_s: float = 0.0  # this run's baseline, measured just before it
    base_import_s: float = 0.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_python() -> str:
    """The interpreter the Makefile would make the venv with (its PYTHON), for the baseline too."""
    result = subprocess.run(
        ["make", "-s", "--no-print-directory", "--eval", "print-python: ; @echo $(PYTHON)", "print-python"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip() or "python3"


def clean_environment(cache: Path, *, pip_config: bool) -> dict[str, str]:
    """This environment with empty package caches under `cache`, and no venv or path of ours.

    pip_config False: no pip configuration file and no PIP_* variables (a machine without this
    one's local indexes and wheel folder); uv reads neither anyway."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("UV_", "VIRTUAL_ENV", "PYTHONPATH", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"))
    }
    if not pip_config:
        env = {k: v for k, v in env.items() if not k.startswith("PIP_")}
        env["PIP_CONFIG_FILE"] = os.devnull
    env.update(
        {
            "PIP_CACHE_DIR": str(cache / "pip"),
            "UV_CACHE_DIR": str(cache / "uv"),
            "XDG_CACHE_HOME": str(cache),
        }
    )
    return env


def baseline_install(python: str, folder: Path, env: dict[str, str]) -> tuple[float, float]:
    """Seconds for `python -m venv` + `pip install` of the three packages (empty cache), and the
    median milliseconds of a fresh interpreter's import of them from that venv."""
    venv = folder / "baseline-venv"
    started = time.perf_counter()
    subprocess.run([python, "-m", "venv", str(venv)], env=env, check=True)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *BASELINE_PACKAGES],
        env=env,
        check=True,
        stderr=subprocess.DEVNULL,
    )
    install_s = time.perf_counter() - started
    probe = (
        f"import time; s = time.perf_counter(); {BASELINE_IMPORT}; print((time.perf_counter() - s) * 1000)"
    )
    times = []
    for _ in range(7):
        out = subprocess.run(
            [str(venv / "bin" / "python"), "-c", probe], env=env, capture_output=True, text=True
        )
        times.append(float(out.stdout))
    return install_s, statistics.median(times[1:])  # the first reads the files from disk


def clone(rev: str, into: Path) -> str:
    """A real clone (no hard links) of the repository at `rev`; returns the commit."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{rev}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run(
        ["git", "clone", "--quiet", "--no-local", "--no-checkout", str(ROOT), str(into)], check=True
    )
    subprocess.run(["git", "checkout", "--quiet", commit], cwd=into, check=True)
    return commit


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[bytes, float]:
    started = time.perf_counter()
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=120) as response:
        body = response.read()
    return body, time.perf_counter() - started


def load_page(base: str) -> tuple[float, list[tuple[str, float]]]:
    """The page as a browser loads it: the HTML, then what it names, then each module's imports,
    a level at a time, at most BROWSER_CONNECTIONS requests at once. Seconds, and each request's."""
    started = time.perf_counter()
    html, took = fetch(base + "/")
    timings = [("/", took)]
    seen = {"/"}
    level = [(urljoin(base + "/", path), path.endswith(".js")) for path in PAGE_ASSETS.findall(html.decode())]
    with ThreadPoolExecutor(BROWSER_CONNECTIONS) as pool:
        while level:
            level = [(url, is_js) for url, is_js in dict.fromkeys(level) if url not in seen]
            seen.update(url for url, _ in level)
            answers = list(pool.map(lambda item: (item, *fetch(item[0])), level))
            following = []
            for (url, is_js), body, took in answers:
                timings.append((url.removeprefix(base), took))
                if is_js:
                    following += [
                        (urljoin(url, spec), True) for spec in MODULE_IMPORTS.findall(body.decode())
                    ]
            level = following
    return time.perf_counter() - started, timings


def sign_in(base: str, key: str) -> float:
    """What the sign-in form and the experiments list then call: the key check, then two at once."""
    headers = {"SERVICE-API-KEY": key}
    api = base + "/console/v1"
    started = time.perf_counter()
    fetch(f"{api}/experiments?limit=1", headers)
    listing = f"{api}/experiments?page=1&limit=20"  # api.js leaves the empty filters out
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda url: fetch(url, headers), [listing, f"{api}/layers?limit=1000"]))
    return time.perf_counter() - started


def browser_load(base: str, key: str, signin_after: float) -> tuple[float, float, float, float]:
    """The same in chromium: the sign-in form drawn, then the experiments list drawn; cold, then warm."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        figures = []
        for warm in (False, True):
            page = browser.new_context().new_page()
            started = time.perf_counter()
            page.goto(base + "/")
            page.wait_for_selector("input[name=key]")
            figures.append(time.perf_counter() - started)
            time.sleep(0 if warm else signin_after)
            started = time.perf_counter()
            page.fill("input[name=key]", key)
            page.click("button[type=submit]")
            # At / the route is the default one (experiments), drawn when body gets data-rendered.
            page.wait_for_selector("body[data-rendered]", state="attached")
            figures.append(time.perf_counter() - started)
            page.context.close()
        browser.close()
    return figures[0], figures[1], figures[2], figures[3]


@contextlib.contextmanager
def make_serve(repo: Path, port: int, env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[str]]:
    """`make serve PORT=port` in its own process group, stopped with Ctrl-C (SIGINT) at the end."""
    with log.open("w") as err:
        process = subprocess.Popen(
            ["make", "serve", f"PORT={port}"],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            bufsize=1,
            start_new_session=True,
        )
        try:
            yield process
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def first_start(
    rev: str, folder: Path, env: dict[str, str], *, browser: bool, timeout: float, signin_after: float
) -> tuple[Start, str]:
    """One fresh clone, `make serve`, the first page."""
    start = Start()
    repo = folder / "repo"
    commit = clone(rev, repo)
    port = free_port()
    lines: list[tuple[float, str]] = []
    done = threading.Event()
    started = time.perf_counter()
    with make_serve(repo, port, env, folder / "make-serve.log") as process:

        def read() -> None:
            assert process.stdout is not None
            for raw in process.stdout:
                lines.append((time.perf_counter() - started, raw.rstrip("\n")))
                if raw.startswith("Try:"):
                    done.set()
            done.set()

        threading.Thread(target=read, daemon=True).start()
        done.wait(timeout)
        banner = {line.partition(":")[0]: (at, line.partition(":")[2].strip()) for at, line in lines}
        if "Try" not in banner:
            tail = (folder / "make-serve.log").read_text()[-3000:]
            start.error = f"no URL within {timeout:g} s (make exit {process.poll()}): {tail}"
            return start, commit
        start.url_s = banner["Web console"][0]
        start.install_s = next((at for at, line in lines if SERVE_COMMAND.search(line)), 0.0)
        start.server_s = start.url_s - start.install_s
        base = banner["Web console"][1].rstrip("/")
        key = banner["Console key (SERVICE-API-KEY)"][1]
        try:
            if browser:
                figures = browser_load(base, key, signin_after)
                start.page_s, start.signin_s, start.warm_page_s, start.warm_signin_s = figures
            else:
                start.page_s, start.requests = load_page(base)
                time.sleep(signin_after)
                start.signin_s = sign_in(base, key)
                start.warm_page_s, _ = load_page(base)
                start.warm_signin_s = sign_in(base, key)
        except Exception as exc:  # whatever failed (HTTP, Playwright), the URL's figure stands
            start.error = f"the page: {type(exc).__name__}: {exc}"
    return start, commit


def report(starts: list[Start], browser: bool, signin_after: float) -> None:
    installs = ", ".join(f"{s.base_install_s:.1f}" for s in starts)
    imports = ", ".join(f"{s.base_import_s * 1000:.0f}" for s in starts)
    packages = " ".join(BASELINE_PACKAGES)
    print(f"baseline, each run's own: python -m venv + pip install {packages} (empty cache): {installs} s;")
    print(f"  then a fresh interpreter's `{BASELINE_IMPORT}` (median of 6): {imports} ms")
    how = (
        "chromium (Playwright)" if browser else f"HTTP, {BROWSER_CONNECTIONS} requests at a time as a browser"
    )
    print(f"first page: {how}, at once; sign-in {signin_after:g} s after it; then both again (warm)\n")
    header = (
        f"{'run':<4} {'URL s':>7} {'x base':>7} {'install s':>10} {'server s':>9} "
        f"{'page s':>7} {'x import':>9} {'sign-in s':>10} {'warm page s':>12} {'warm sign-in s':>15}"
    )
    print(header)
    print("-" * len(header))
    for number, start in enumerate(starts, 1):
        if not start.url_s:
            print(f"{number:<4} FAILED: {start.error}")
            continue
        line = (
            f"{number:<4} {start.url_s:>7.1f} {start.url_s / start.base_install_s:>7.2f} "
            f"{start.install_s:>10.1f} {start.server_s:>9.1f}"
        )
        if start.error:
            print(f"{line}  {start.error}")
            continue
        print(
            f"{line} {start.page_s:>7.2f} {start.page_s / start.base_import_s:>9.2f} {start.signin_s:>10.2f} "
            f"{start.warm_page_s:>12.2f} {start.warm_signin_s:>15.2f}"
        )
    for number, start in enumerate(starts, 1):
        if start.requests:
            slowest = sorted(start.requests, key=lambda r: -r[1])[:3]
            shown = ", ".join(f"{path} {took * 1000:.0f} ms" for path, took in slowest)
            print(f"run {number}: {len(start.requests)} requests for the page; the slowest: {shown}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rev", default="HEAD", help="the commit to clone (default: HEAD; uncommitted work is not in it)"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="fresh clones, each with its baseline (default 1)"
    )
    parser.add_argument(
        "--no-pip-config",
        action="store_true",
        help="ignore this machine's pip configuration and PIP_* variables (local indexes, wheel folders), "
        "as on a machine without them",
    )
    parser.add_argument(
        "--browser", action="store_true", help=f"load the page in {CHROMIUM} through Playwright"
    )
    parser.add_argument(
        "--signin-after",
        type=float,
        default=5.0,
        metavar="S",
        help="seconds between the page and the sign-in (reading it and pasting the key; default 5)",
    )
    parser.add_argument(
        "--timeout", type=float, default=900, help="seconds to wait for the URL (default 900)"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary folders (their paths are printed)"
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.browser and not Path(CHROMIUM).is_file():
        parser.error(f"--browser needs {CHROMIUM} (make chromium)")
    python = make_python()
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    if dirty.strip() and args.rev == "HEAD":
        print(
            "note: the working tree has uncommitted changes; the clone has HEAD without them", file=sys.stderr
        )
    starts: list[Start] = []
    commit = ""
    for _ in range(args.repeat):
        folder = Path(tempfile.mkdtemp(prefix="expconsole-first-start-"))
        try:
            pip_config = not args.no_pip_config
            baseline_env = clean_environment(folder / "baseline-cache", pip_config=pip_config)
            install_s, import_ms = baseline_install(python, folder, baseline_env)
            env = clean_environment(folder / "cache", pip_config=pip_config)  # empty caches of its own
            start, commit = first_start(
                args.rev,
                folder,
                env,
                browser=args.browser,
                timeout=args.timeout,
                signin_after=args.signin_after,
            )
            start.base_install_s, start.base_import_s = install_s, import_ms / 1000
            starts.append(start)
        finally:
            if args.keep:
                print(f"kept {folder}", file=sys.stderr)
            else:
                shutil.rmtree(folder, ignore_errors=True)
    config = "without pip configuration" if args.no_pip_config else "with this machine's pip configuration"
    print(
        f"commit {commit[:12]} ({args.rev}), venv Python {python}, {config}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    report(starts, args.browser, args.signin_after)
    return 1 if any(s.error for s in starts) else 0


if __name__ == "__main__":
    sys.exit(main())
