"""The agent's UDP socket binds to the address that reaches the switch, not to every
interface: a listener is bound to the testbed's interface only."""

from innet.host.agent.transport import UdpTransport, UdpTransportConfig, route_source


def test_default_bind_is_the_route_source_not_all_interfaces():
    transport = UdpTransport(UdpTransportConfig("127.0.0.1", 9))
    try:
        assert transport.local_address[0] == "127.0.0.1"
    finally:
        transport.close()


def test_route_source_of_a_loopback_destination():
    assert route_source("127.0.0.1") == "127.0.0.1"


def test_explicit_local_ip_is_kept():
    transport = UdpTransport(UdpTransportConfig("127.0.0.1", 9, "127.0.0.2"))
    try:
        assert transport.local_address[0] == "127.0.0.2"
    finally:
        transport.close()
