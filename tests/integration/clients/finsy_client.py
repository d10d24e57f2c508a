"""A finsy client run as a subprocess by the integration tests.

    finsy_client.py ADDRESS DEVICE_ID P4INFO P4BLOB ELECTION_ID [ACTION...]

Connects with finsy's default flow (arbitration, Capabilities, Get COOKIE_ONLY, Set when
the cookie differs), then runs the actions in order and prints one line per action:

- ``delete_all``: ``switch.delete_all()``; prints ``delete_all ok``;
- ``read_tables``: wildcard table read; prints ``read_tables N``;
- ``primary``: prints ``primary True|False``;
- ``hold``: waits until stdin closes (keeps the stream open for arbitration tests).

A failure prints ``error <CODE> <message>`` and exits 1.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import finsy as fy


async def main(argv: list[str]) -> int:
    address, device_id, p4info, blob, election_id, *actions = argv
    options = fy.SwitchOptions(p4info=Path(p4info), p4blob=Path(blob), device_id=int(device_id),
                               initial_election_id=int(election_id))
    switch = fy.Switch("sw", address, options)
    try:
        async with switch:
            for action in actions:
                if action == "delete_all":
                    await switch.delete_all()
                    print("delete_all ok", flush=True)
                elif action == "read_tables":
                    entries = [e async for e in switch.read(fy.P4TableEntry())]
                    print(f"read_tables {len(entries)}", flush=True)
                elif action == "primary":
                    print(f"primary {switch.is_primary}", flush=True)
                elif action == "hold":
                    print("holding", flush=True)
                    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
                else:
                    print(f"error UNKNOWN_ACTION {action}", flush=True)
                    return 1
    except fy.P4ClientError as error:
        print(f"error {error.code.name} {error.message}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
