"""A p4runtime-shell session run in its own venv (protobuf<3.21) by the integration tests.

    p4rt_shell_client.py ADDRESS DEVICE_ID P4INFO DEVICE_CONFIG TABLE ACTION SPEC

SPEC is a JSON object: {"match": {field: value}, "params": {param: value},
"priority": N, "group": {"id": G, "replicas": [[port, instance], ...]},
"packet_out": {"payload_hex": "..", "metadata": {name: value}}}.
Connects (election id (1,0), VERIFY_AND_COMMIT, Get P4INFO_AND_COOKIE), inserts the
entry, reads the table back, creates the multicast group, sends the packet-out, and
prints one JSON line with what it read. Run with a working directory outside the innet
tree: innet's top-level ``p4/`` folder would shadow the ``p4`` protobuf package.
"""

import json
import sys

import p4runtime_sh.shell as sh
from p4runtime_sh.p4runtime import P4RuntimeWriteException


def main(argv):
    address, device_id, p4info, device_config, table, action, spec_text = argv
    spec = json.loads(spec_text)
    sh.setup(device_id=int(device_id), grpc_addr=address, election_id=(1, 0),
             config=sh.FwdPipeConfig(p4info, device_config), verbose=False)
    try:
        entry = sh.TableEntry(table)(action=action)
        for field, value in spec["match"].items():
            entry.match[field] = value
        for param, value in spec["params"].items():
            entry.action[param] = value
        if spec.get("priority"):
            entry.priority = spec["priority"]
        entry.insert()
        read = [" ".join(str(e).split()) for e in sh.TableEntry(table).read()]
        result = {"entries": len(read), "read": read}
        group = spec.get("group")
        if group:
            mc = sh.MulticastGroupEntry(group["id"])
            for port, instance in group["replicas"]:
                mc.add(port, instance)
            mc.insert()
            result["groups"] = [" ".join(str(g).split()) for g in sh.MulticastGroupEntry().read()]
        out = spec.get("packet_out")
        if out:
            packet = sh.PacketOut(payload=bytes.fromhex(out["payload_hex"]), **out["metadata"])
            packet.send()
            result["packet_out"] = "sent"
        try:
            entry.insert()
            result["duplicate_insert"] = "accepted"
        except P4RuntimeWriteException as error:
            result["duplicate_insert"] = " ".join(str(error).split())
        print(json.dumps(result), flush=True)
    finally:
        sh.teardown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
