"""Rail-only on the host side: HB-domain collectives and all-to-all."""
