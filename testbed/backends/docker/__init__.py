"""Docker, wrapped once: the innet image and the compose-like runtime."""
