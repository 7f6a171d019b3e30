"""pip_options: the vllm role's index, mirror, wheelhouse, CA and proxy settings."""
from __future__ import annotations

import pytest

from ansible_collections.v100.llm.plugins.module_utils.vllm.pip_options import pip_plan

NONE = dict(index_url="", extra_index_urls=[], wheelhouse="", ca_bundle="", proxy="")


def plan(**changes):
    return pip_plan(dict(NONE, **changes))


def test_defaults_use_pips_own_configuration():
    assert plan() == {"errors": [], "args": [],
                      "environment": {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}}


def test_a_national_mirror_with_its_ca_and_a_proxy():
    result = plan(index_url="https://pypi.tuna.tsinghua.edu.cn/simple",
                  extra_index_urls=["https://mirrors.aliyun.com/pypi/simple/"],
                  ca_bundle="/etc/ssl/certs/corp-ca.pem", proxy="http://proxy.example:3128")
    assert result["args"] == ["--index-url", "https://pypi.tuna.tsinghua.edu.cn/simple",
                              "--extra-index-url=https://mirrors.aliyun.com/pypi/simple/"]
    assert result["environment"]["PIP_CERT"] == "/etc/ssl/certs/corp-ca.pem"
    assert result["environment"]["HTTPS_PROXY"] == result["environment"]["HTTP_PROXY"] == "http://proxy.example:3128"


def test_a_wheelhouse_installs_offline():
    assert plan(wheelhouse="/srv/wheelhouse")["args"] == ["--no-index", "--find-links", "/srv/wheelhouse"]


@pytest.mark.parametrize("changes, message", [
    (dict(index_url="pypi.tuna.tsinghua.edu.cn/simple"), "vllm_pip_index_url=pypi.tuna.tsinghua.edu.cn/simple is not"),
    (dict(extra_index_urls=["ftp://x"]), "vllm_pip_extra_index_urls has 'ftp://x'"),
    (dict(wheelhouse="wheels"), "vllm_wheelhouse=wheels must be an absolute path"),
    (dict(wheelhouse="/srv/w", index_url="https://pypi.org/simple"), "installs offline (--no-index)"),
    (dict(ca_bundle="corp.pem"), "vllm_pip_ca_bundle=corp.pem must be an absolute path"),
    (dict(proxy="proxy:3128"), "vllm_pip_proxy=proxy:3128 is not a proxy URL"),
])
def test_refusals_name_the_variable(changes, message):
    result = plan(**changes)
    assert result["args"] == [] and any(message in error for error in result["errors"]), result["errors"]
