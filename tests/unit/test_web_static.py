"""The web console's file server (expconsole.web.static_response): only the console's own files."""

from __future__ import annotations

import pytest

from expconsole.web import ROOT, static_response


def test_root_is_the_page_and_files_have_their_type() -> None:
    page = static_response("GET", None, {})
    assert page["statusCode"] == 200 and page["headers"]["Content-Type"].startswith("text/html")
    assert page["body"] == (ROOT / "index.html").read_text()
    script = static_response("GET", "js/main.js", {})
    assert script["headers"]["Content-Type"].startswith("text/javascript")
    assert static_response("GET", "app.css", {})["headers"]["Content-Type"].startswith("text/css")


def test_an_unchanged_file_is_a_304_and_a_changed_etag_is_not() -> None:
    etag = static_response("GET", "app.css", {})["headers"]["ETag"]
    assert static_response("GET", "app.css", {"If-None-Match": etag})["statusCode"] == 304
    assert static_response("GET", "app.css", {"if-none-match": '"other"'})["statusCode"] == 200


@pytest.mark.parametrize(
    "path",
    [
        "../__init__.py",
        "js/../../__init__.py",
        "__init__.py",
        "vendor/VENDORED.md",
        "vendor/uPlot.LICENSE",
        ".hidden.js",
        "js",
        "missing.js",
        "/etc/passwd",
        "",
    ],
)
def test_anything_but_a_console_file_is_a_404(path: str) -> None:
    response = static_response("GET", path, {})
    assert response["statusCode"] == 404, path
    assert "console file" in response["body"]


def test_only_get_and_head() -> None:
    response = static_response("POST", "app.css", {})
    assert response["statusCode"] == 405 and response["headers"]["Allow"] == "GET, HEAD"
    assert static_response("HEAD", "app.css", {})["statusCode"] == 200
