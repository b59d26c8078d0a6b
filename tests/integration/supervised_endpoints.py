"""An LLM endpoint outside the stack, lost under load: the supervised row of docs/faults.md "LLM endpoint killed".

The endpoint is the tests' OpenAI-compatible fake (tests/fakes/openai_server.py) in a process and session of its
own, on a fixed port, so it can die as a real server does (kill -9: connections refused from then on) and come
back at the same address. The stack's services get it from SKBQA_LLM_* at `stack up` (`env()`), the parser
service uses it, and the supervisor's restarts inherit it. Its reply is one the parser refuses as untrusted (the
question is then kept as text), which an embedded engine on the same endpoint reproduces: the reference of an
answer the LLM path gave (`llm_references`).

Nothing in the stack restarts for this fault: the row checks that no process did, that answers kept coming from
the encoder parser (the fallback in each answer's notes and in the parser's `skbqa_errors_total{kind=llm_fallback}`)
while the endpoint was gone, and — once it is started again — that the parser uses it again.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from skbqa.devstack.ports import free_port
from skbqa.devstack.processes import tcp_open
from tests.integration.supervised_faults import Fault
from tests.integration.supervised_stack import StackConfig, SupervisedStack, wait_for

REPO = Path(__file__).resolve().parents[2]
REPLY = "}}}} this is not Cypher (((("  # refused by the parser as untrusted: the question is kept as text
TIMEOUT_S = "2"  # per LLM call; one retry (SKBQA_LLM_RETRIES)
_SERVE = (
    "import sys, time\n"
    "from tests.fakes.openai_server import FakeOpenAIServer\n"
    "FakeOpenAIServer(default_reply=sys.argv[2]).start(int(sys.argv[1]))\n"
    "time.sleep(1e9)\n"
)


class LlmEndpoint:
    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def env(self) -> dict[str, str]:
        """SKBQA_LLM_* for the stack's services (the parser service turns its LLM parser on with them)."""
        return {
            "SKBQA_LLM_URL": self.url,
            "SKBQA_LLM_MODEL": "fake",
            "SKBQA_LLM_TIMEOUT": TIMEOUT_S,
            "SKBQA_LLM_RETRIES": "1",
        }

    @contextlib.contextmanager
    def exported(self) -> Iterator[None]:
        """`env()` in this process's environment for the block (around `stack up`: the stack and its supervisor
        pass it on to every process they start), as it was afterwards."""
        saved = {name: os.environ.get(name) for name in self.env()}
        os.environ.update(self.env())
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    def start(self) -> LlmEndpoint:
        argv = [sys.executable, "-c", _SERVE, str(self.port), REPLY]
        self.process = subprocess.Popen(argv, cwd=REPO, start_new_session=True)
        if not wait_for(lambda: tcp_open(self.port), 30):
            self.stop()
            raise RuntimeError(f"the fake LLM endpoint did not listen on {self.port}")
        return self

    def kill(self) -> int:
        """kill -9 of the endpoint's process group; returns its pid."""
        assert self.process is not None
        pid = self.process.pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        return pid

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()


def llm_references(engine: Any, questions: list[str], endpoint: LlmEndpoint) -> dict[str, list[int]]:
    """The embedded engine's rankings with its parser on `endpoint` (which must be up): what an answer the LLM
    path gave must equal."""
    from skbqa.engine.embedded import EmbeddedEngine
    from skbqa.models.openai_chat import LlmSettings, OpenAIChatModel

    settings = LlmSettings(
        url=endpoint.url, model="fake", timeout=float(TIMEOUT_S) * 5, retries=1
    )  # generous: the reference must come from the LLM path, never from a fallback
    llm_engine = EmbeddedEngine(engine.stores, engine.encoder, OpenAIChatModel.from_settings(settings))
    rankings = {}
    for question in questions:
        answer = llm_engine.ask(question)
        if "parser_fallback" in answer.notes:
            raise RuntimeError(f"the reference fell back: {answer.notes['parser_fallback']}")
        rankings[question] = [item.node_id for item in answer.items]
    return rankings


def endpoint_lost(
    endpoint: LlmEndpoint, parser: str, down_s: float, within_s: float
) -> Callable[..., dict[str, Any]]:
    """The row's fault: kill -9 of the endpoint, `down_s` of load without it, then the endpoint started again
    (by the test, as its own operator would: it is no process of the stack) and the parser using it again."""

    def recovery(stack: SupervisedStack, normal: Callable[[], bool]) -> dict[str, Any]:
        restarts_before = dict(stack.state().get("restarts", {}))
        fallbacks_before = _fallbacks(stack, parser)
        killed_at = time.monotonic()
        evidence: dict[str, Any] = {"killed_pid": endpoint.kill(), "killed_at": killed_at}
        time.sleep(down_s)
        evidence["llm_fallback_metric_while_down"] = _fallbacks(stack, parser) - fallbacks_before
        endpoint.start()
        evidence["endpoint_back_after_s"] = round(time.monotonic() - killed_at, 1)
        back = wait_for(normal, within_s, every_s=0.5)
        evidence["recovered_after_s"] = round(time.monotonic() - killed_at, 1) if back else None
        evidence["llm_fallback_metric"] = _fallbacks(stack, parser) - fallbacks_before
        evidence["stack_restarts_during_row"] = {
            name: n - int(restarts_before.get(name, 0))
            for name, n in stack.state().get("restarts", {}).items()
            if n != restarts_before.get(name, 0)
        }
        evidence["outcome"] = (
            f"nothing restarted; endpoint back after {evidence['endpoint_back_after_s']} s (the test restarts it), "
            + ("LLM parser used again" if back else "LLM parser NOT used again")
        )
        return evidence

    return recovery


def _fallbacks(stack: SupervisedStack, parser: str) -> int:
    return int(stack.counter(parser, "skbqa_errors_total", stage="parser", kind="llm_fallback") or 0)


# Two gateways (no Triton, no Ray: neither is under test here, and the 2 cores go to the rows' processes); the
# services get the endpoint's SKBQA_LLM_* at `stack up` (`LlmEndpoint.exported`).
CLIENTS_STACK = StackConfig("clients", replicas={"gateway": 2}, ray=False, triton=False)
ENDPOINT_DOWN_S = 10.0


def clients_faults(endpoint: LlmEndpoint, recover_within_s: float) -> list[Fault]:
    """The rows of `CLIENTS_STACK`, each loaded through the project's client on both gateways."""
    return [
        Fault(
            "kill -9 of one gateway replica of 2, clients balanced over both", "gateway-0", balanced=True, llm=True
        ),
        Fault(
            f"LLM endpoint killed (parser service on an OpenAI-compatible server), back after {ENDPOINT_DOWN_S:g} s",
            "parser-0",
            balanced=True,
            llm=True,
            recovery=endpoint_lost(endpoint, "parser-0", ENDPOINT_DOWN_S, recover_within_s),
        ),
    ]
