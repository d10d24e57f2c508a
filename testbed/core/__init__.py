"""What every testbed shares: topology values, the Testbed base, processes, ports, worker processes, reports."""
