"""Why the diagnosis cannot start: the only errors that stop it (everything else becomes a finding)."""

from __future__ import annotations


class DiagnosisError(Exception):
    """The diagnosis cannot start (bad window, cluster not resolvable); the CLI exits 2."""


class ClusterNotFound(DiagnosisError):
    """No cluster by that name or ARN in this account and region."""


class UnknownNodes(DiagnosisError):
    """A node named on the command line is no node of the cluster (the message names the closest)."""
