# -*- coding: utf-8 -*-
"""pip's source options for the vllm role: index, extra indexes, a wheelhouse,
a CA bundle and a proxy, as command-line arguments and environment, or the
reasons they are refused.

Pure functions, no I/O: the vllm role passes what ``pip_plan`` returns to
every ``pip install`` it runs.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Sequence

_INDEX = re.compile(r"^(https?|file)://\S+$")
_PROXY = re.compile(r"^(https?|socks5h?)://\S+$")


def _errors(index_url: str, extra_index_urls: Sequence[Any], wheelhouse: str, ca_bundle: str,
            proxy: str) -> List[str]:
    errors = []
    if index_url and not _INDEX.match(index_url):
        errors.append("vllm_pip_index_url=%s is not an http(s):// or file:// URL "
                      "(e.g. https://pypi.tuna.tsinghua.edu.cn/simple)" % index_url)
    for url in extra_index_urls:
        if not isinstance(url, str) or not _INDEX.match(url):
            errors.append("vllm_pip_extra_index_urls has %r, not an http(s):// or file:// URL" % (url,))
    if wheelhouse and not wheelhouse.startswith("/"):
        errors.append("vllm_wheelhouse=%s must be an absolute path on the host" % wheelhouse)
    if wheelhouse and (index_url or extra_index_urls):
        errors.append("vllm_wheelhouse=%s installs offline (--no-index), so vllm_pip_index_url and "
                      "vllm_pip_extra_index_urls would be ignored: set one or the other" % wheelhouse)
    if ca_bundle and not ca_bundle.startswith("/"):
        errors.append("vllm_pip_ca_bundle=%s must be an absolute path on the host (a PEM file)" % ca_bundle)
    if proxy and not _PROXY.match(proxy):
        errors.append("vllm_pip_proxy=%s is not a proxy URL such as http://proxy.example:3128" % proxy)
    return errors


def pip_plan(settings: Mapping[str, Any]) -> Dict[str, Any]:
    """settings: index_url, extra_index_urls, wheelhouse, ca_bundle, proxy ("" / [] for none).

    Returns {"errors": [...], "args": [...], "environment": {...}}; args and
    environment are empty when there are errors.
    """
    index_url = str(settings.get("index_url") or "")
    extra = list(settings.get("extra_index_urls") or [])
    wheelhouse = str(settings.get("wheelhouse") or "")
    ca_bundle = str(settings.get("ca_bundle") or "")
    proxy = str(settings.get("proxy") or "")
    errors = _errors(index_url, extra, wheelhouse, ca_bundle, proxy)
    if errors:
        return {"errors": errors, "args": [], "environment": {}}
    if wheelhouse:
        args = ["--no-index", "--find-links", wheelhouse]
    else:
        args = (["--index-url", index_url] if index_url else []) + ["--extra-index-url=" + url for url in extra]
    environment = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    if ca_bundle:
        environment["PIP_CERT"] = ca_bundle
    if proxy:
        environment.update(HTTPS_PROXY=proxy, HTTP_PROXY=proxy)
    return {"errors": [], "args": args, "environment": environment}
