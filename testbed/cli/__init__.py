"""argparse only: thin calls into the testbed systems."""
