"""The client command the MCP conformance suite runs: ``python client.py URL``, the scenario's
name in ``MCP_CONFORMANCE_SCENARIO``. It becomes ``threadline mcp try URL [TOOL JSON]``, the
tool and arguments being what the scenario's server asks to be called (as every SDK's
conformance client picks them by scenario); the rest is Threadline's own client."""

from __future__ import annotations

import os
import sys

CALLS = {
    "tools_call": ("add_numbers", '{"a": 5, "b": 3}'),
    "sse-retry": ("test_reconnection", "{}"),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", "{}"),
}
"""What each scenario calls; the others connect and list the tools."""


def main() -> None:
    url = sys.argv[-1]
    call = CALLS.get(os.environ.get("MCP_CONFORMANCE_SCENARIO", ""), ())
    argv = [sys.executable, "-m", "adapters.cli", "mcp", "try", url, *call]
    os.execv(sys.executable, argv)


if __name__ == "__main__":
    main()
