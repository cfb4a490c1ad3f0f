"""The control API: the cluster's test API over HTTP/JSON on 127.0.0.1, for any language.

`kipwire-broker serve --control-port N` starts it (`serve_control`); docs/control-api.yaml is
its OpenAPI description and docs/mockbroker.md ("dev broker") shows it with curl.

- `api.py`: the endpoints, each a call to the same `Cluster` method the Python API uses
  (`ControlAPI`), and the fault ids the HTTP side hands out.
- `http.py`: a small HTTP/1.1 server on trio (persistent connections, as clients pool them), so
  every endpoint runs in the cluster's own trio loop with no thread in between.
"""

from __future__ import annotations

from .api import ControlAPI, HttpError
from .http import serve_control

__all__ = ["ControlAPI", "HttpError", "serve_control"]
