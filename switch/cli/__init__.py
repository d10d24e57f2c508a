"""Command-line entry points of the embedded target; each module is one console script.

Kept apart from the library so that only these modules turn exceptions into exit codes.
"""
