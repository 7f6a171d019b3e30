# -*- coding: utf-8 -*-
"""GET over HTTP(S) for the model downloads, with a token that stays with the host it was given for."""
from __future__ import annotations

from http.client import HTTPException
from typing import Any, Dict, Mapping, Optional, Tuple

from ansible.module_utils.six.moves.urllib.error import HTTPError
from ansible.module_utils.six.moves.urllib.parse import urljoin, urlparse
from ansible.module_utils.urls import open_url

REDIRECTS = (301, 302, 303, 307, 308)
# What get_keeping_token_home raises when no HTTP answer came: no connection, a refused redirect (ValueError), a
# garbled answer (HTTPException: BadStatusLine and the like).
NOT_ANSWERED = (OSError, ValueError, HTTPException)
# The options of plugins/doc_fragments/model_http.py.
REQUEST_ARGUMENT_SPEC = {
    "headers": {"type": "dict", "default": {}, "no_log": True},
    "timeout": {"type": "int", "default": 60},
    "validate_certs": {"type": "bool", "default": True},
}


def without_authorization(headers: Mapping[str, str]) -> Dict[str, str]:
    return {name: value for name, value in headers.items() if name.lower() != "authorization"}


def redirect_refused(url: str, target: str) -> str:
    """Why a redirect from url to target is not followed ("" when it is): only to http(s), and never from https
    down to http, where anyone on the path reads and changes what comes back."""
    scheme, was = urlparse(target).scheme, urlparse(url).scheme
    if scheme not in ("http", "https"):
        return "%s redirected to %s: only http and https are followed" % (url, target)
    if was == "https" and scheme == "http":
        return "%s redirected to %s: a redirect from https down to plain http is not followed" % (url, target)
    return ""


def get_keeping_token_home(url: str, headers: Mapping[str, str], timeout: int, validate_certs: bool,
                           max_redirects: int = 10, method: str = "GET",
                           redirect_answers_with: str = "") -> Tuple[Optional[Any], int, Any]:
    """GET (or method) url, following redirects here so that the Authorization header goes to the host it was
    given for and to no other (a Hugging Face /resolve/ URL redirects to its CDN; RFC 9110 section 15.4: a client
    resending credentials elsewhere leaks them). A redirect carrying the header redirect_answers_with is the
    answer (the Hub's X-Linked-Size). -> (answer, status, response headers); answer is None for an error status
    or such a redirect; status -1 after max_redirects redirects."""
    headers = dict(headers)
    for _ in range(max_redirects):
        try:
            answer = open_url(url, method=method, headers=headers, timeout=timeout, validate_certs=validate_certs,
                              follow_redirects="none")
            return answer, answer.getcode(), answer.headers
        except HTTPError as error:
            location = error.headers.get("Location") if error.code in REDIRECTS else None
            if not location or (redirect_answers_with and error.headers.get(redirect_answers_with)):
                return None, error.code, error.headers
            target = urljoin(url, location)
            refused = redirect_refused(url, target)
            if refused:
                raise ValueError(refused)
            if urlparse(target).netloc != urlparse(url).netloc:
                headers = without_authorization(headers)
            url = target
    return None, -1, {}
