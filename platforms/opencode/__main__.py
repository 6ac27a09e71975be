"""``python -m platforms.opencode``: ``opencode serve`` on the stub, offline, on loopback.

opencode is a compiled program from npm (``opencode-ai``, pinned in package.json and
package-lock.json beside this file, installed by ``make opencode-install``), not a
Python server, so this launcher only prepares what it runs in and then becomes it
(``exec``: the PID the kit probes for memory is opencode's own). It runs with nothing
of the operator's environment: HOME and the XDG folders under ``--data-dir``, its
config written there, and every way it has of reaching past 127.0.0.1 closed (the
model catalogue, updates, plugins, sharing, LSP downloads and ripgrep's download off
or supplied; npm and any HTTP proxy pointed at a closed loopback port). The server's
password comes from OPENCODE_SERVER_PASSWORD (``make opencode`` passes LOAD_PASSWORD)
and is required: basic auth is always on. A missing setting, binary or a taken port is
one line on stderr and exit 2, before anything is served.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from platforms.listening import CannotListen, listening_socket

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 4096
DEFAULT_STUB_URL = "http://127.0.0.1:4020"
DEFAULT_DATA_DIR = "opencode-data"
HERE = Path(__file__).resolve().parent
# What make opencode-install puts here: the npm package's binary, and ripgrep from PyPI
# (opencode's text search runs rg and downloads it from GitHub when none is on its PATH).
BINARY = HERE / "node_modules" / ".bin" / "opencode"
TOOLS = HERE / "tools" / "bin"
# The version package.json pins; the binary is asked before it serves.
VERSION = "1.18.33"
PASSWORD_ENV = "OPENCODE_SERVER_PASSWORD"
# Where everything that would leave the machine is sent instead: a loopback port nothing
# listens on (discard), so a fetch fails at once and nothing leaves 127.0.0.1.
CLOSED = "http://127.0.0.1:9/"
# The model on the wire: provider "stub", model "stub" (what a dialect names in a message).
PROVIDER, MODEL = "stub", "stub"
# opencode's own switches for what it would fetch or start on its own, all read by 1.18.33.
OFFLINE = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    "OPENCODE_DISABLE_EMBEDDED_WEB_UI": "1",
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
}
# Tools that change the machine or reach the network, denied: they leave the model's tool
# list (7 tools, a ~22 kB request, instead of 11 and ~32 kB).
DENIED_TOOLS = ("edit", "bash", "webfetch")


class LaunchError(ValueError):
    """opencode cannot be started as asked; the message is one line with the fix."""


def config(stub_url: str) -> dict:
    """opencode.json: the stub as the only provider (its OpenAI-compatible client is in the
    binary, so nothing is installed at run time), and nothing that reaches out."""
    return {
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "loadkit stub",
                "options": {"baseURL": stub_url.rstrip("/") + "/v1", "apiKey": "stub"},
                "models": {MODEL: {"name": MODEL, "limit": {"context": 128000, "output": 4096}}},
            }
        },
        "enabled_providers": [PROVIDER],
        "model": f"{PROVIDER}/{MODEL}",
        "small_model": f"{PROVIDER}/{MODEL}",
        "autoupdate": False,
        "share": "disabled",
        "snapshot": False,
        "lsp": False,
        "formatter": False,
        "permission": {tool: "deny" for tool in DENIED_TOOLS},
    }


def prepared(data_dir: Path, stub_url: str) -> dict[str, str]:
    """Make the folders and config under ``data_dir``; the environment opencode runs in
    (HOME, XDG, config, offline switches, closed registry and proxies; nothing inherited)."""
    root = data_dir.resolve()
    dirs = {name: root / name for name in ("home", "config", "data", "cache", "state", "project")}
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    (root / "opencode.json").write_text(json.dumps(config(stub_url), indent=2) + "\n")
    # opencode forks `npm install @opencode-ai/plugin` into its config folder at start.
    (dirs["home"] / ".npmrc").write_text(f"registry={CLOSED}\n")
    return {
        "PATH": f"{TOOLS}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(dirs["home"]),
        "XDG_CONFIG_HOME": str(dirs["config"]),
        "XDG_DATA_HOME": str(dirs["data"]),
        "XDG_CACHE_HOME": str(dirs["cache"]),
        "XDG_STATE_HOME": str(dirs["state"]),
        "OPENCODE_CONFIG": str(root / "opencode.json"),
        "npm_config_registry": CLOSED,
        "HTTP_PROXY": CLOSED,
        "HTTPS_PROXY": CLOSED,
        "NO_PROXY": "127.0.0.1,localhost",
        **OFFLINE,
    }


def binary() -> Path:
    """The pinned opencode binary, or LaunchError saying how to install it."""
    if not BINARY.exists() or not (TOOLS / "rg").exists():
        raise LaunchError(f"{BINARY} or {TOOLS / 'rg'} is missing: run make opencode-install")
    return BINARY


def main(argv: list[str]) -> int:
    """Become ``opencode serve``; 2 on a startup error."""
    parser = argparse.ArgumentParser(
        prog="python -m platforms.opencode",
        description=f"opencode serve {VERSION} on the stub, offline ({PASSWORD_ENV} required).",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"default {DEFAULT_HOST}")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    parser.add_argument(
        "--stub-url", default=DEFAULT_STUB_URL, help=f"the model (default {DEFAULT_STUB_URL})"
    )
    parser.add_argument(
        "--data-dir",
        default=DEFAULT_DATA_DIR,
        help="HOME, XDG folders, config, SQLite and the project folder opencode serves "
        f"(default {DEFAULT_DATA_DIR})",
    )
    args = parser.parse_args(argv)
    password = os.environ.get(PASSWORD_ENV, "")
    try:
        if not password:
            raise LaunchError(f"export {PASSWORD_ENV} (make opencode passes LOAD_PASSWORD)")
        program = binary()
        # Bound and let go at once: a taken port is this line, not opencode's trace.
        listening_socket(args.host, args.port).close()
    except LaunchError as exc:
        print(f"platforms.opencode: {exc}", file=sys.stderr)
        return 2
    except CannotListen as exc:
        print(f"platforms.opencode: --port: {exc}; pick a free port", file=sys.stderr)
        return 2
    env = {**prepared(Path(args.data_dir), args.stub_url), PASSWORD_ENV: password}
    # The project folder is the one opencode serves: sessions and searches are scoped to it.
    os.chdir(Path(args.data_dir).resolve() / "project")
    command = ["serve", "--hostname", args.host, "--port", str(args.port), "--print-logs"]
    os.execve(program, [str(program), *command, "--log-level", "INFO"], env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
