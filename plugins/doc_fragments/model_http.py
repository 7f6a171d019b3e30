# -*- coding: utf-8 -*-
"""The request options the modules that GET from a model server share (model_download, hf_model_listing, http_text)."""
from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods (Ansible's doc fragment shape)
    DOCUMENTATION = r"""
options:
  headers:
    description: Request headers (an C(Authorization) token; it goes to the URL's host only, also across redirects).
    type: dict
    default: {}
  timeout:
    description: Seconds a connection or read may stall.
    type: int
    default: 60
  validate_certs:
    description: Check the server's TLS certificate.
    type: bool
    default: true
"""
