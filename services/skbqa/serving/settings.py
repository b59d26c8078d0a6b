"""Settings of a served process (`skbqa serve`): every flag also reads an `SKBQA_*` environment variable, so a
Helm chart configures pods with env vars and a developer uses flags."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from skbqa.common.errors import InvalidInputError

ROLES = ("gateway", "parser", "symbols", "grounding", "ranking", "reranker")
# "all": the gateway and every stage worker in one process, over the given bus (memory:// or Kafka). Besides these,
# a role may name consecutive stages joined by "+" ("parser+symbols+grounding"): one service running them in
# process (serving/stages/chain.py).
# "updater": the one writer of the knowledge base in the distributed form (live updates, docs/updates.md).
SERVE_ROLES = (*ROLES, "all", "updater")
ROLE_HELP = f"{'|'.join(SERVE_ROLES)}, or consecutive stages joined by '+' (e.g. parser+symbols+grounding)"


@dataclass(frozen=True)
class ServiceSettings:
    index: Path
    role: str | None = None  # None: the embedded server (every stage in this process, no bus)
    bus_url: str = "memory://"
    host: str = "127.0.0.1"
    port: int = 50051
    metrics_port: int | None = None
    encoder_url: str | None = None  # triton://host:8001/skbqa_encoder; None = the local encoder
    vectors_url: str | None = None  # milvus://host:19530 or a Milvus Lite path (…/vectors.db); None = exact numpy
    graph_url: str | None = None  # nebula://host:9669/space; None = the index's CSR arrays
    # updater: where each folded snapshot is shipped (s3://BUCKET/PREFIX) for replicas that do not share its index
    # directory (changes/shipping.py); None = the shared directory only
    snapshots_url: str | None = None
    snapshots_keep: int = 3  # updater: the newest shipped versions the store keeps (changes/retention.py)
    s3_endpoint_url: str | None = None  # the S3-compatible endpoint of snapshots (push and fetch); None = AWS
    ray_address: str | None = None  # the reranker stage's Ray cluster ("local" starts one in this process)
    llm: bool = False  # an OpenAI-compatible endpoint from SKBQA_LLM_* (parser, rerankers, spark)
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    tls_client_ca_file: Path | None = None
    tokens_file: Path | None = None
    admin_tokens_file: Path | None = None  # tokens that may also change the knowledge base (ApplyChanges)
    health_port: int | None = None  # plaintext health-only listener (for probes when the API port uses TLS)
    request_timeout_s: float = 30.0
    max_inflight: int = 64
    workers: int = 2  # embedded: requests answered at once
    lag_interval_s: float = 5.0  # stage workers: how often the group's lag goes to skbqa_kafka_lag (<= 0: off)
    # gateway: how long messages may wait for a stage without progress before its health turns NOT_SERVING
    stage_stall_s: float = 10.0
    # gateway: how long a request may go without word while no stage holds it before it is sent again (0: never)
    resend_after_s: float = 5.0
    # the deployment's co-located stage groups ("parser+symbols+grounding", …): the gateway does not watch the
    # topics inside a group (they have no consumer group), and `all` runs each group as one worker
    colocated: tuple[str, ...] = ()

    def validate(self) -> None:
        from skbqa.serving.stages.chain import colocated_groups, is_colocated, stage_roles

        if is_colocated(self.role):
            stage_roles(str(self.role))
        elif self.role is not None and self.role not in SERVE_ROLES:
            raise InvalidInputError(f"unknown role {self.role!r}; roles: {ROLE_HELP}")
        colocated_groups(self.colocated)
        if not 0 <= self.port <= 65535:
            raise InvalidInputError(f"port must be within 0..65535, got {self.port}")
        if self.snapshots_url is not None:
            from skbqa.ingest.object_store import Location

            if self.role != "updater":
                raise InvalidInputError(
                    "--snapshots is the updater's setting (--role updater); replicas fetch what its records name"
                )
            Location.parse(self.snapshots_url)
        from skbqa.changes.retention import checked_keep

        checked_keep(self.snapshots_keep)
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise InvalidInputError("TLS needs both a certificate and a key file")
        if self.tls_client_ca_file is not None and self.tls_cert_file is None:
            raise InvalidInputError("mutual TLS (a client CA) needs the server's certificate and key too")


def stages_of(role: str | None) -> tuple[str, ...]:
    """The pipeline stages a served role runs here: every one for the embedded server and `all`, none for the
    gateway, the members of a co-located role."""
    from skbqa.serving.stages.chain import stage_roles
    from skbqa.serving.stages.core import ROLES as STAGES

    if role is None or role == "all":
        return STAGES
    return () if role in ("gateway", "updater") else stage_roles(role)


def env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(f"SKBQA_{name}")
    return value if value not in (None, "") else default
